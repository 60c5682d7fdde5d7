package webhookclient

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/mutatis-dev/mutatis/manifest"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

func load(t *testing.T, file string) ([]Configuration, error) {
	t.Helper()
	set, err := manifest.Load(context.Background(), []string{filepath.Join("testdata", file)}, nil)
	if err != nil {
		t.Fatalf("manifest.Load: %v", err)
	}
	return Load(set)
}

func TestLoadDefaultsAndSorts(t *testing.T) {
	configs, err := load(t, "valid.yaml")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if len(configs) != 2 || configs[0].Configuration.Name != "a-labels" || configs[1].Configuration.Name != "z-sidecars" {
		t.Fatalf("want a-labels then z-sidecars, got %+v", configs)
	}
	beta := configs[0]
	if beta.APIVersion != "admissionregistration.k8s.io/v1beta1" {
		t.Errorf("APIVersion = %q", beta.APIVersion)
	}
	w := beta.Configuration.Webhooks[0]
	// v1beta1's own defaults, kept through the conversion to v1.
	if *w.FailurePolicy != admissionregistrationv1.Ignore || *w.MatchPolicy != admissionregistrationv1.Exact ||
		*w.TimeoutSeconds != 30 || strings.Join(w.AdmissionReviewVersions, ",") != "v1beta1" ||
		*w.ReinvocationPolicy != admissionregistrationv1.NeverReinvocationPolicy {
		t.Errorf("v1beta1 defaults: failurePolicy %v matchPolicy %v timeout %v versions %v reinvocation %v",
			*w.FailurePolicy, *w.MatchPolicy, *w.TimeoutSeconds, w.AdmissionReviewVersions, *w.ReinvocationPolicy)
	}
	v1 := configs[1].Configuration.Webhooks[0]
	if *v1.FailurePolicy != admissionregistrationv1.Fail || *v1.MatchPolicy != admissionregistrationv1.Equivalent ||
		*v1.TimeoutSeconds != 10 || *v1.ClientConfig.Service.Port != 443 || *v1.Rules[0].Scope != admissionregistrationv1.AllScopes ||
		v1.NamespaceSelector == nil || v1.ObjectSelector == nil {
		t.Errorf("v1 defaults not applied: %+v", v1)
	}
	if configs[1].Configuration.Generation != 1 {
		t.Errorf("generation = %d, want 1 (PrepareForCreate)", configs[1].Configuration.Generation)
	}
}

// TestLoadRefuses checks every refusal names the file, the document, the
// configuration and the field path, with kube-apiserver's words (golden
// file testdata/invalid.golden, -update rewrites it).
func TestLoadRefuses(t *testing.T) {
	configs, err := load(t, "invalid.yaml")
	if len(configs) != 0 {
		t.Errorf("invalid configurations were loaded: %d", len(configs))
	}
	if err == nil {
		t.Fatal("no error")
	}
	got := err.Error() + "\n"
	golden := filepath.Join("testdata", "invalid.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, rerr := os.ReadFile(golden)
	if rerr != nil {
		t.Fatal(rerr)
	}
	if got != string(want) {
		t.Errorf("errors differ from %s:\n got:\n%s\nwant:\n%s", golden, got, want)
	}
	for _, fragment := range []string{
		`testdata/invalid.yaml#0: MutatingWebhookConfiguration "bad": webhooks[0].name: Invalid value: "nodots"`,
		`webhooks[0].clientConfig: Required value: exactly one of url or service is required`,
		`webhooks[0].sideEffects: Unsupported value: "Unknown"`,
		`webhooks[0].timeoutSeconds: Invalid value: 31`,
		`webhooks[1].name: Duplicate value: "nodots"`,
		`webhooks[0].matchConditions[0].expression`,
		`testdata/invalid.yaml#1: MutatingWebhookConfiguration "beta-defaults": webhooks[0].sideEffects: Unsupported value: "Unknown"`,
		`testdata/invalid.yaml#2: MutatingWebhookConfiguration "unknown-field": strict decoding error: unknown field "webhooks[0].timeout"`,
		`testdata/invalid.yaml#3: MutatingWebhookConfiguration "v2": no kind "MutatingWebhookConfiguration" is registered for version "admissionregistration.k8s.io/v2"`,
	} {
		if !strings.Contains(got, fragment) {
			t.Errorf("errors lack %q", fragment)
		}
	}
}

func TestLoadRefusesADuplicateName(t *testing.T) {
	doc := `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: same}
webhooks:
- name: a.example.com
  clientConfig: {url: "https://example.com/a"}
  sideEffects: None
  admissionReviewVersions: [v1]
`
	set, err := manifest.Parse("hooks.yaml", []byte(doc+"---\n"+doc))
	if err != nil {
		t.Fatal(err)
	}
	configs, err := Load(set)
	if len(configs) != 1 || err == nil || !strings.Contains(err.Error(), `hooks.yaml#1: MutatingWebhookConfiguration "same": MutatingWebhookConfiguration "same" already exists (first defined at hooks.yaml#0)`) {
		t.Fatalf("configs %d, error %v", len(configs), err)
	}
	if objs := APIObjects(configs); len(objs) != 1 || objs[0].Name != "same" {
		t.Errorf("APIObjects: %v", objs)
	}
}

// TestLoadOnly: a file given as webhooks holds nothing else; each other
// document is an error naming it, beside the configurations' own errors.
func TestLoadOnly(t *testing.T) {
	cases := []struct {
		name  string
		yaml  string
		want  []string
		count int
	}{
		{name: "configurations only", count: 1, yaml: `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: a}
webhooks: [{name: a.example.com, clientConfig: {url: "https://h/x"}, sideEffects: None, admissionReviewVersions: [v1]}]`},
		{name: "mutating and validating configurations, one name", count: 2, yaml: `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: a}
webhooks: [{name: a.example.com, clientConfig: {url: "https://h/x"}, sideEffects: None, admissionReviewVersions: [v1]}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: a}
webhooks: [{name: a.example.com, clientConfig: {url: "https://h/x"}, sideEffects: None, admissionReviewVersions: [v1]}]`},
		{name: "a validating configuration twice", yaml: `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: a}
webhooks: [{name: a.example.com, clientConfig: {url: "https://h/x"}, sideEffects: None, admissionReviewVersions: [v1]}]
---
apiVersion: admissionregistration.k8s.io/v1beta1
kind: ValidatingWebhookConfiguration
metadata: {name: a}
webhooks: [{name: a.example.com, clientConfig: {url: "https://h/x"}, sideEffects: None}]`,
			want: []string{`hooks.yaml#1: ValidatingWebhookConfiguration "a": ValidatingWebhookConfiguration "a" already exists (first defined at hooks.yaml#0)`}},
		{name: "an invalid validating configuration names its field", yaml: `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: v}
webhooks:
- name: v.example.com
  clientConfig: {url: "https://h/x"}
  sideEffects: None
  admissionReviewVersions: [v1]
  matchConditions: [{name: c, expression: "object.metadata.name =="}]
  reinvocationPolicy: IfNeeded`,
			want: []string{`hooks.yaml#0: ValidatingWebhookConfiguration "v": strict decoding error: unknown field "webhooks[0].reinvocationPolicy"`}},
		{name: "a validating matchCondition that does not compile", yaml: `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: v}
webhooks:
- name: v.example.com
  clientConfig: {url: "https://h/x"}
  sideEffects: None
  admissionReviewVersions: [v1]
  timeoutSeconds: 31
  matchConditions: [{name: c, expression: "object.metadata.name =="}]`,
			want: []string{`hooks.yaml#0: ValidatingWebhookConfiguration "v": webhooks[0].timeoutSeconds: Invalid value: 31`, `webhooks[0].matchConditions[0].expression: Invalid value: "object.metadata.name =="`}},
		{name: "a policy, a binding and a ConfigMap are named", yaml: `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: p}
spec:
  matchConstraints: {resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]}
  reinvocationPolicy: Never
  mutations: [{patchType: JSONPatch, jsonPatch: {expression: "[]"}}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: b}
spec: {policyName: p}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: c, namespace: d}`, want: []string{
			`hooks.yaml#0: MutatingAdmissionPolicy "p": a MutatingAdmissionPolicy among the webhook configurations`,
			`hooks.yaml#1: MutatingAdmissionPolicyBinding "b": a MutatingAdmissionPolicyBinding among the webhook configurations`,
			`hooks.yaml#2: ConfigMap "c": a ConfigMap among the webhook configurations (other objects go with the resources)`}},
		{name: "an invalid configuration names its field", yaml: `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: a}
webhooks: [{name: a.example.com, clientConfig: {url: "https://h/x"}, sideEffects: Unknown, admissionReviewVersions: [v1]}]`,
			want: []string{`hooks.yaml#0: MutatingWebhookConfiguration "a": webhooks[0].sideEffects: Unsupported value: "Unknown"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			set, err := manifest.Parse("hooks.yaml", []byte(c.yaml))
			if err != nil {
				t.Fatal(err)
			}
			configs, err := LoadOnly(set)
			if len(c.want) == 0 {
				if err != nil || len(configs) != c.count {
					t.Fatalf("got %d configurations, %v; want %d", len(configs), err, c.count)
				}
				if n := len(APIObjects(configs)) + len(ValidatingAPIObjects(configs)); n != c.count {
					t.Errorf("APIObjects and ValidatingAPIObjects hold %d configurations, want %d", n, c.count)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}
