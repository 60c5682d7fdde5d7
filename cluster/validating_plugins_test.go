package cluster

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mutatis-dev/mutatis/manifest"
	"github.com/mutatis-dev/mutatis/scheme/admissionplugins"
)

// sidecarPolicy injects a proxy container into every Pod: it sets no
// securityContext and limits its cpu to 2.
const sidecarPolicy = `
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: a-sidecar}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  reinvocationPolicy: Never
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: >
        Object{spec: Object.spec{containers: [Object.spec.containers{name: "proxy", image: "registry.example.com/proxy:2.1",
          resources: Object.spec.containers.resources{limits: {"cpu": "2"}}}]}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: a-sidecar}
spec: {policyName: a-sidecar}
`

// hardenPolicy gives the second container (the sidecar), when it has no
// securityContext, what PodSecurity restricted asks of it (a JSONPatch:
// capabilities.drop is atomic, which an ApplyConfiguration may not set).
const hardenPolicy = `
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: b-harden}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  matchConditions:
  - name: unhardened-sidecar
    expression: size(object.spec.containers) > 1 && !has(object.spec.containers[1].securityContext)
  reinvocationPolicy: IfNeeded
  mutations:
  - patchType: JSONPatch
    jsonPatch:
      expression: >
        [JSONPatch{op: "add", path: "/spec/containers/1/securityContext",
          value: Object.spec.containers.securityContext{allowPrivilegeEscalation: false,
            capabilities: Object.spec.containers.securityContext.capabilities{drop: ["ALL"]}}}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: b-harden}
spec: {policyName: b-harden}
`

const lockedWorld = `
apiVersion: v1
kind: Namespace
metadata: {name: locked, labels: {pod-security.kubernetes.io/enforce: restricted}}
---
apiVersion: v1
kind: Namespace
metadata: {name: capped}
---
apiVersion: v1
kind: LimitRange
metadata: {name: max, namespace: capped}
spec:
  limits:
  - {type: Container, max: {cpu: "1"}}
`

// TestValidatingPlugins: kube-apiserver's built-in validating plugins see
// what the mutating chain made: a sidecar a policy injects is refused by
// PodSecurity restricted, or by a LimitRange's maximum, after the
// registry's validation; a second policy that gives it the securityContext
// restricted asks for has it admitted.
func TestValidatingPlugins(t *testing.T) {
	restricted := `{"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}}`
	for _, c := range []struct {
		name, policies, namespace string
		flags                     admissionplugins.Flags
		by, denied                string
		annotations               map[string]string
	}{
		{name: "PodSecurity restricted refuses the injected sidecar", policies: sidecarPolicy, namespace: "locked",
			by: "PodSecurity", denied: `pods "web" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "proxy" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "proxy" must set securityContext.capabilities.drop=["ALL"])`},
		{name: "a second policy's securityContext has it admitted", policies: sidecarPolicy + "---" + hardenPolicy, namespace: "locked",
			annotations: map[string]string{"pod-security.kubernetes.io/enforce-policy": "restricted:latest"}},
		{name: "without PodSecurity, it is admitted", policies: sidecarPolicy, namespace: "locked", flags: admissionplugins.Flags{Disable: []string{"PodSecurity"}}},
		{name: "LimitRanger's maximum refuses the sidecar's limit", policies: sidecarPolicy, namespace: "capped",
			by: "LimitRanger", denied: `pods "web" is forbidden: maximum cpu usage per Container is 1, but limit is 2`},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			cl, err := New(load(t, lockedWorld), Options{AdmissionPlugins: c.flags})
			if err != nil {
				t.Fatal(err)
			}
			set, err := manifest.Load(ctx, []string{"-"}, strings.NewReader(c.policies))
			if err != nil {
				t.Fatal(err)
			}
			policies, bindings := set.APIObjects()
			ev, err := cl.Evaluator(nil, policies, bindings)
			if err != nil {
				t.Fatal(err)
			}
			pod := &unstructured.Unstructured{}
			if err := pod.UnmarshalJSON([]byte(`{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "` + c.namespace + `"},
				"spec": {"securityContext": ` + restricted + `, "containers": [{"name": "app", "image": "nginx",
				"securityContext": {"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}}]}}`)); err != nil {
				t.Fatal(err)
			}
			d, err := cl.DecodeSteps(Request{Object: pod})
			if err != nil {
				t.Fatal(err)
			}
			adm, err := cl.Admit(ctx, Chain{Policies: ev}, d)
			if err != nil {
				t.Fatal(err)
			}
			status, by := adm.Refusal()
			if c.denied != "" {
				if status == nil || status.ErrStatus.Message != c.denied || status.ErrStatus.Code != 403 || by != c.by {
					t.Fatalf("refused by %q: %v\nwant %s's 403\n%s", by, status, c.by, c.denied)
				}
				if adm.Result.Denied != nil || adm.Invalid != nil {
					t.Errorf("refused before the validating stage: %v %v", adm.Result.Denied, adm.Invalid)
				}
				return
			}
			if status != nil {
				t.Fatalf("refused by %s: %v", by, status)
			}
			for k, want := range c.annotations {
				if got := adm.Validation.AuditAnnotations[k]; got != want {
					t.Errorf("audit annotation %s = %q, want %q", k, got, want)
				}
			}
		})
	}
}
