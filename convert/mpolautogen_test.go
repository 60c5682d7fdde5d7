package convert

import "testing"

func TestPodToTemplateExpression(t *testing.T) {
	for _, tc := range []struct{ name, in, config, want string }{
		{"spec read", "has(object.spec.volumes)", "defaults", "has(object.spec.template.spec.volumes)"},
		{"cronjob spec read", "oldObject.spec.containers", "cronjobs", "oldObject.spec.jobTemplate.spec.template.spec.containers"},
		{"labels and annotations", "object.metadata.labels.a + object.metadata.annotations.b", "defaults",
			"object.spec.template.metadata.labels.a + object.spec.template.metadata.annotations.b"},
		{"name kept", "object.metadata.name", "defaults", "object.metadata.name"},
		{"root constructor", "Object{spec: Object.spec{runtimeClassName: \"x\"}}", "defaults",
			"Object{spec: Object.spec{template: Object.spec.template{spec: Object.spec.template.spec{runtimeClassName: \"x\"}}}}"},
		{"root constructor, cronjob", " Object {spec: Object.spec{}}", "cronjobs",
			"Object{spec: Object.spec{jobTemplate: Object.spec.jobTemplate{spec: Object.spec.jobTemplate.spec{template: Object.spec.jobTemplate.spec.template{spec: Object.spec.jobTemplate.spec.template.spec{}}}}}}"},
		{"metadata constructor not rewritten", "Object{metadata: Object.metadata{}}", "defaults",
			"Object{spec: Object.spec{template: Object.spec.template{metadata: Object.metadata{}}}}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := podToTemplateExpression(tc.in, tc.config); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestKyvernoMutatingPolicyAutogen(t *testing.T) {
	const head = `apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata: {name: p}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration: {expression: 'Object{spec: Object.spec{runtimeClassName: "x"}}'}
`
	for _, tc := range []struct {
		name, autogen string
		want          []string
	}{
		{"all", "", []string{"kyverno-p", "kyverno-p-autogen-cronjobs", "kyverno-p-autogen-defaults"}},
		{"none", "  autogen: {podControllers: {controllers: []}}\n", []string{"kyverno-p"}},
		{"deployments", "  autogen: {podControllers: {controllers: [deployments]}}\n", []string{"kyverno-p", "kyverno-p-autogen-defaults"}},
		{"custom", "  autogen: {podControllers: {controllers: [jobsets.v1alpha2.jobset.x-k8s.io]}}\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Convert([]Input{{Name: "p.yaml", Data: []byte(head + tc.autogen)}})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range r.Converted {
				got = append(got, c.Policy.Name)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v (refused %v)", got, tc.want, r.Refused)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
			}
			if tc.want == nil && len(r.Refused) == 0 {
				t.Errorf("a custom controller is not refused")
			}
		})
	}
}
