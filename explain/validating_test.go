package explain_test

import (
	"context"
	"encoding/base64"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/cluster"
	"github.com/mutatis-dev/mutatis/explain"
	"github.com/mutatis-dev/mutatis/manifest"
	"github.com/mutatis-dev/mutatis/scheme/admissionplugins"
	"github.com/mutatis-dev/mutatis/test/webhookserver"
	"github.com/mutatis-dev/mutatis/webhookclient"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// world is the simulated cluster: a namespace PodSecurity restricted
// guards, a plain one, a LimitRange's maximum in a third, params.
const world = `
apiVersion: v1
kind: Namespace
metadata: {name: locked, labels: {pod-security.kubernetes.io/enforce: restricted}}
---
apiVersion: v1
kind: Namespace
metadata: {name: shop, labels: {env: prod}}
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
---
apiVersion: v1
kind: ConfigMap
metadata: {name: a-limits, namespace: shop, labels: {limits: "yes"}}
data: {maxContainers: "1"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: b-limits, namespace: shop, labels: {limits: "yes"}}
data: {maxContainers: "3"}
`

// sidecar injects a proxy container with a cpu limit of 2 and no
// securityContext into every Pod.
const sidecar = `
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: sidecar}
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
metadata: {name: sidecar}
spec: {policyName: sidecar}
`

// harden gives the sidecar what PodSecurity restricted asks of it.
const harden = `
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: z-harden}
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
metadata: {name: z-harden}
spec: {policyName: z-harden}
`

// vaps are ValidatingAdmissionPolicies of every kind of decision: a
// Deny on containers without a memory limit (messageExpression, reason),
// a Warn and Audit one with auditAnnotations, one per param of a
// selector, one whose expression fails under failurePolicy Ignore, one
// that selects only Deployments, one whose binding selects another
// namespace, one whose matchCondition is false.
const vaps = `
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: a-require-memory-limits}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE, DELETE], resources: [pods]}
  validations:
  - expression: "request.operation == 'DELETE' || object.spec.containers.all(c, has(c.resources.limits) && 'memory' in c.resources.limits)"
    messageExpression: "'container ' + object.spec.containers.filter(c, !has(c.resources.limits) || !('memory' in c.resources.limits))[0].name + ' has no memory limit'"
    reason: Forbidden
  - expression: "request.operation != 'DELETE' || oldObject.metadata.?labels.?protected.orValue('') != 'true'"
    message: protected Pods may not be deleted
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: a-require-memory-limits}
spec: {policyName: a-require-memory-limits, validationActions: [Deny]}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: b-team-label}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  validations:
  - expression: "has(object.metadata.labels) && 'team' in object.metadata.labels"
    message: Pods need a team label
  auditAnnotations:
  - key: containers
    valueExpression: "string(size(object.spec.containers))"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: b-team-label}
spec: {policyName: b-team-label, validationActions: [Warn, Audit]}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: c-max-containers}
spec:
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  validations:
  - expression: "size(object.spec.containers) <= int(params.data.maxContainers)"
    messageExpression: "'at most ' + params.data.maxContainers + ' containers'"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: c-max-containers}
spec:
  policyName: c-max-containers
  validationActions: [Warn]
  paramRef: {selector: {matchLabels: {limits: "yes"}}, parameterNotFoundAction: Allow}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: d-broken}
spec:
  failurePolicy: Ignore
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  validations:
  - expression: "object.metadata.annotations['missing'] == 'x'"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: d-broken}
spec: {policyName: d-broken, validationActions: [Deny]}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: e-deployments}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [apps], apiVersions: [v1], operations: [CREATE], resources: [deployments]}
  validations:
  - expression: "false"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: e-deployments}
spec: {policyName: e-deployments, validationActions: [Deny]}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: f-elsewhere}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  matchConditions:
  - {name: never, expression: "false"}
  validations:
  - expression: "false"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: f-elsewhere-staging}
spec:
  policyName: f-elsewhere
  validationActions: [Deny]
  matchResources: {namespaceSelector: {matchLabels: {env: staging}}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: f-elsewhere-all}
spec: {policyName: f-elsewhere, validationActions: [Deny]}
`

// pod is a Pod of namespace ns with an app container restricted admits
// (a memory limit, a securityContext), labelled labels (a YAML flow
// mapping).
func pod(ns, labels string) string {
	return `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "` + ns + `", "labels": ` + labels + `},
		"spec": {"securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
		"containers": [{"name": "app", "image": "nginx", "resources": {"limits": {"memory": "64Mi", "cpu": "100m"}},
		"securityContext": {"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}}]}}`
}

// durations are the times of a trace, which vary from run to run.
var durations = regexp.MustCompile(`\b[0-9]+(\.[0-9]+)?(ns|µs|ms|s)\b`)

// TestValidatingStage renders the validating stage of real admissions
// (cluster.Admit through the mutating chain, the registry and the
// validating list): the built-in plugins' decisions (PodSecurity's level,
// LimitRanger's maximum), every ValidatingAdmissionPolicy decision,
// skipped evaluation, param and audit annotation, the validating
// webhooks' calls, the refusal and who refused, the audit annotations
// and warnings; DELETE too. Golden files (go test -run
// TestValidatingStage -update rewrites them); times are DURATION.
func TestValidatingStage(t *testing.T) {
	srv, err := webhookserver.Start(t.TempDir(), "hooks.example.com")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ca := base64.StdEncoding.EncodeToString(srv.CABundle)
	webhook := func(name, path, extra string) string {
		return fmt.Sprintf(`
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: %s}
webhooks:
- name: %s.example.com
  clientConfig: {url: %q, caBundle: %s}
  rules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE, DELETE], resources: [pods]}]
  sideEffects: None
  admissionReviewVersions: [v1]
%s`, name, name, srv.URL+path, ca, extra)
	}
	for _, c := range []struct {
		name, policies, webhooks, object string
		operation                        admission.Operation
		noDefaults                       bool
		// exempt is the ci-bot user, whom the AdmissionConfiguration
		// exempts from PodSecurity.
		exempt bool
	}{
		{name: "podsecurity-refuses-the-sidecar", policies: sidecar, object: pod("locked", "{}")},
		{name: "podsecurity-admits-the-hardened-sidecar", policies: sidecar + "---" + harden, object: pod("locked", "{}")},
		{name: "limitranger-refuses-the-sidecar", policies: sidecar, object: pod("capped", "{}")},
		{name: "policies-refuse-the-sidecar", policies: sidecar + "---" + vaps, object: pod("shop", "{}")},
		{name: "policies-admit-with-warnings", policies: vaps, object: pod("shop", "{}")},
		{name: "policies-refuse-a-delete", policies: vaps, object: pod("shop", `{"team": "web", "protected": "true"}`), operation: admission.Delete},
		{name: "webhooks", policies: vaps, object: pod("shop", `{"team": "web"}`),
			webhooks: webhook("warns", webhookserver.PathWarn, "") + "---" + webhook("team", webhookserver.PathRequireLabel+"/tier", "  namespaceSelector: {matchLabels: {env: prod}}\n") +
				"---" + webhook("skipped", webhookserver.PathDeny, "  objectSelector: {matchLabels: {team: none}}\n")},
		{name: "podsecurity-exempts-a-user", policies: sidecar, object: pod("shop", "{}"), exempt: true},
		{name: "nothing-validates", policies: sidecar, object: pod("shop", "{}"), noDefaults: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			opts := cluster.Options{NoDefaults: c.noDefaults}
			if c.exempt {
				opts.AdmissionPlugins.ConfigFile = "testdata/validating/admission.yaml"
			}
			cl, err := cluster.New(load(t, world), opts)
			if err != nil {
				t.Fatal(err)
			}
			set := loadSet(t, c.policies)
			policies, bindings := set.APIObjects()
			ev, err := cl.Evaluator(nil, policies, bindings)
			if err != nil {
				t.Fatal(err)
			}
			ch := cluster.Chain{Policies: ev}
			if vps, vbs := set.ValidatingAPIObjects(); len(vps) > 0 {
				if ch.ValidatingPolicies, err = cl.ValidatingPolicies(nil, vps, vbs); err != nil {
					t.Fatal(err)
				}
			}
			if c.webhooks != "" {
				configs, err := webhookclient.Load(loadSet(t, c.webhooks))
				if err != nil {
					t.Fatal(err)
				}
				d, err := cl.ValidatingWebhooks(webhookclient.ValidatingAPIObjects(configs), nil, webhookclient.Options{}, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer d.Close(nil)
				ch.ValidatingWebhooks = d
			}
			obj := &unstructured.Unstructured{}
			if err := obj.UnmarshalJSON([]byte(c.object)); err != nil {
				t.Fatal(err)
			}
			req := cluster.Request{Object: obj, Operation: c.operation}
			if c.exempt {
				req.User = &user.DefaultInfo{Name: "ci-bot"}
			}
			if c.operation == admission.Delete {
				req.Object, req.OldObject = nil, obj
			}
			d, err := cl.DecodeSteps(req)
			if err != nil {
				t.Fatal(err)
			}
			adm, err := cl.Admit(ctx, ch, d)
			if err != nil {
				t.Fatal(err)
			}
			if adm.Result.Denied != nil || adm.Invalid != nil {
				t.Fatalf("refused before the validating stage: %v %v", adm.Result.Denied, adm.Invalid)
			}
			var b strings.Builder
			explain.ValidatingStage(&b, adm.Validation)
			got := durations.ReplaceAllString(b.String(), "DURATION")
			checkGolden(t, "testdata/validating/"+c.name+".golden", got)
		})
	}
}

func loadSet(t *testing.T, text string) *manifest.Set {
	t.Helper()
	set, err := manifest.Load(context.Background(), []string{"-"}, strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func load(t *testing.T, text string) []manifest.Object {
	t.Helper()
	return loadSet(t, text).Objects
}

func checkGolden(t *testing.T, golden, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll("testdata/validating", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("differs from %s (-update rewrites it):\n%s", golden, got)
	}
}

// TestAfterWebhooks: the built-in plugins kube-apiserver runs after the
// ValidatingAdmissionWebhook plugin (ResourceQuota) are written after
// the webhooks, the others before the policies.
func TestAfterWebhooks(t *testing.T) {
	var b strings.Builder
	explain.ValidatingStage(&b, chain.Result{Records: chain.Records{
		PluginSteps: []admissionplugins.Step{{Plugin: "LimitRanger"}, {Plugin: "PodSecurity"}, {Plugin: "ResourceQuota"}},
		Calls:       []chain.Call{{Record: chain.Record{Configuration: "c", Hook: "w.example.com", Skip: chain.SkipRules}}},
	}})
	want := `explain: validating admission plugins before the policies: LimitRanger, PodSecurity: admitted
explain: validating webhook "w.example.com" of "c": skipped: no rule matches
explain: validating admission plugins after the webhooks: ResourceQuota: admitted
explain: validating: admitted
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
