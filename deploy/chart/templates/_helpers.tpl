{{/* Labels of every object: the kustomize base's app.kubernetes.io/name and Helm's own. */}}
{{- define "mutatis.labels" -}}
app.kubernetes.io/name: mutatis
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* Informer mode: shadow or native (the controller runs). */}}
{{- define "mutatis.informer" -}}
{{- if ne .Values.mode "static" }}true{{ end -}}
{{- end -}}

{{/* Checks the combinations values.schema.json cannot express. */}}
{{- define "mutatis.validate" -}}
{{- if and (eq .Values.mode "native") (not .Values.native.pluginDisabled) -}}
{{- fail "mode native: set native.pluginDisabled=true only when kube-apiserver runs with --disable-admission-plugins=MutatingAdmissionPolicy (otherwise every policy mutates twice; see docs/deploy.md)" -}}
{{- end -}}
{{- if and .Values.networkPolicy.enabled (not .Values.networkPolicy.apiServerCIDRs) -}}
{{- fail "networkPolicy.enabled: set networkPolicy.apiServerCIDRs to the addresses kube-apiserver calls webhooks from (docs/deploy.md, \"NetworkPolicy\", lists them per provider): without them the policy would refuse kube-apiserver too" -}}
{{- end -}}
{{- if eq .Values.mode "static" -}}
{{- if ne .Values.certificates.mode "cert-manager" -}}
{{- fail "mode static: certificates.mode must be cert-manager (self-signed certificates are made by the controller, which static mode does not run)" -}}
{{- end -}}
{{- if not .Values.static.policies -}}
{{- fail "mode static: static.policies is empty" -}}
{{- end -}}
{{- if not .Values.static.rules -}}
{{- fail "mode static: static.rules is empty: the webhook configuration would send mutatis nothing" -}}
{{- end -}}
{{- end -}}
{{- end -}}
