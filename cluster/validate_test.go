package cluster

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mutatis-dev/mutatis/manifest"
	"github.com/mutatis-dev/mutatis/scheme/admissionplugins"
	"github.com/mutatis-dev/mutatis/validating"
)

// denyAllPods is a ValidatingAdmissionPolicy that refuses every Pod.
const denyAllPods = `
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: no-pods}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  validations:
  - expression: "false"
    message: no pods here
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: no-pods}
spec: {policyName: no-pods, validationActions: [Deny]}
`

// TestValidatingStageFollowsThePluginFlags: kube-apiserver's
// --disable-admission-plugins (and --admission-plugins without it) leave
// the ValidatingAdmissionPolicy plugin out, and with it the stage a Chain
// brings; enabled by default.
func TestValidatingStageFollowsThePluginFlags(t *testing.T) {
	set, err := manifest.Parse("vap.yaml", []byte(denyAllPods))
	if err != nil {
		t.Fatal(err)
	}
	vps, vbs := set.ValidatingAPIObjects()
	for _, tc := range []struct {
		name   string
		flags  admissionplugins.Flags
		denied bool
	}{
		{"the default plugins", admissionplugins.Flags{}, true},
		{"--disable-admission-plugins ValidatingAdmissionPolicy", admissionplugins.Flags{Disable: []string{"ValidatingAdmissionPolicy"}}, false},
		{"--admission-plugins without it", admissionplugins.Flags{Only: []string{"NamespaceLifecycle"}}, false},
		{"--admission-plugins with it", admissionplugins.Flags{Only: []string{"ValidatingAdmissionPolicy"}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sim, err := New(nil, Options{AdmissionPlugins: tc.flags})
			if err != nil {
				t.Fatal(err)
			}
			vev, err := sim.ValidatingPolicies(validating.NewCompiler(), vps, vbs)
			if err != nil {
				t.Fatal(err)
			}
			pod := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod",
				"metadata": map[string]any{"name": "web", "namespace": "default"},
				"spec":     map[string]any{"containers": []any{map[string]any{"name": "app", "image": "nginx:1.27"}}}}}
			d, err := sim.DecodeSteps(Request{Object: pod})
			if err != nil {
				t.Fatal(err)
			}
			adm, err := sim.Admit(context.Background(), Chain{ValidatingPolicies: vev}, d)
			if err != nil {
				t.Fatal(err)
			}
			if status, by := adm.Refusal(); (status != nil) != tc.denied {
				t.Fatalf("refusal %v by %q, want denied %v", status, by, tc.denied)
			}
		})
	}
}
