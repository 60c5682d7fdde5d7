package main

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mutatis-dev/mutatis/test/webhookserver"
)

// validatingConfig is a ValidatingWebhookConfiguration named name with
// one webhook on Pods (CREATE and DELETE); client is its clientConfig (a
// YAML flow mapping) and extra more fields of the webhook.
func validatingConfig(name, webhook, client, extra string) string {
	return fmt.Sprintf(`apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: %s}
webhooks:
- name: %s
  clientConfig: %s
  rules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE, DELETE], resources: [pods]}]
  sideEffects: None
  admissionReviewVersions: [v1]
%s`, name, webhook, client, extra)
}

// teamPolicy is a MutatingAdmissionPolicy that labels Pods team=web.
const teamPolicy = `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: team-label}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
  failurePolicy: Fail
  reinvocationPolicy: Never
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: 'Object{metadata: Object.metadata{labels: {"team": "web"}}}'
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: team-label}
spec: {policyName: team-label}
`

// TestApplyValidatingWebhooks runs apply with ValidatingWebhookConfigurations
// in --webhooks against the test webhook server: a webhook that reads a
// label a policy set refuses the request without the policy (exit 1,
// kube-apiserver's message) and admits it with the policy; DELETE
// requests send the old object; a patch in the answer and a webhook down
// are refused as kube-apiserver refuses them.
func TestApplyValidatingWebhooks(t *testing.T) {
	srv, err := webhookserver.Start(t.TempDir(), "team.hooks.svc")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ca := base64.StdEncoding.EncodeToString(srv.CABundle)
	url := func(path string) string { return fmt.Sprintf("{url: %q, caBundle: %s}", srv.URL+path, ca) }
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const pod = "../../examples/sidecar-injection/testdata/labelled-pod.yaml"
	const sidecarPolicy = "../../examples/sidecar-injection/policy.yaml"
	policy := write("team-policy.yaml", teamPolicy)
	team := write("team.yaml", validatingConfig("require-team", "team.example.com", url(webhookserver.PathRequireLabel+"/team"), ""))
	service := write("team-service.yaml", validatingConfig("require-team", "team.example.com",
		fmt.Sprintf("{service: {namespace: hooks, name: team, path: %s}, caBundle: %s}", webhookserver.PathRequireLabel+"/team", ca), ""))
	cases := []struct {
		name   string
		args   []string
		code   int
		want   []string
		reject []string
	}{
		{name: "refused: no policy sets the label the webhook requires", code: 1,
			args: []string{"-f", pod, "--webhooks", team},
			want: []string{`admission webhook "team.example.com" denied the request: CREATE Pod: the label team is required` + "\n"}},
		{name: "refused through --service-url", code: 1,
			args: []string{"-f", pod, "--webhooks", service, "--service-url", "hooks/team=https://" + srv.Addr()},
			want: []string{`admission webhook "team.example.com" denied the request: CREATE Pod: the label team is required`}},
		{name: "admitted: a policy set the label, and the webhook's warning is printed", code: 0,
			args: []string{"-f", pod, "--webhooks", team, "--policies", policy, "--explain"},
			want: []string{"team: web\n", "Warning: label team=web checked\n",
				`explain: validating webhook "team.example.com" of "require-team": called (AdmissionReview v1, `, "): admitted, no patch\n"}},
		{name: "mutating and validating configurations in one --webhooks", code: 0,
			args: []string{"-f", pod, "--policies", policy + "," + sidecarPolicy, "--webhooks", team + "," + write("sidecar.yaml", webhookConfig("sidecar", "sidecar.example.com", url(webhookserver.PathSidecar), ""))},
			want: []string{"name: sidecar\n", "name: log-shipper\n", "Warning: label team=web checked\n"}},
		{name: "DELETE: the old object is refused", code: 1,
			args: []string{"-f", pod, "--operation", "DELETE", "--webhooks", team},
			want: []string{`admission webhook "team.example.com" denied the request: DELETE Pod: the label team is required`}},
		{name: "a patch in a validating answer under failurePolicy Fail", code: 1,
			args: []string{"-f", pod, "--webhooks", write("patch.yaml", validatingConfig("patches", "labels.example.com", url(webhookserver.PathLabels), ""))},
			want: []string{`Internal error occurred: failed calling webhook "labels.example.com": received invalid webhook response: validating webhook may not return response.patch`,
				`patch.yaml#0: ValidatingWebhookConfiguration "patches": webhooks[0].clientConfig: webhook "labels.example.com" failed closed (failurePolicy Fail)`}},
		{name: "a patch in a validating answer under failurePolicy Ignore", code: 0,
			args:   []string{"-f", pod, "--webhooks", write("patch-ignore.yaml", validatingConfig("patches", "labels.example.com", url(webhookserver.PathLabels), "  failurePolicy: Ignore\n"))},
			want:   []string{`webhook "labels.example.com" failed open (failurePolicy Ignore)`, "inject-logging"},
			reject: []string{"stamped-by"}},
		{name: "a malformed validating configuration names its file and field", code: 2,
			args: []string{"-f", pod, "--webhooks", write("bad.yaml", validatingConfig("bad", "t.example.com", url("/x"), "  timeoutSeconds: 31\n"))},
			want: []string{`bad.yaml#0: ValidatingWebhookConfiguration "bad": webhooks[0].timeoutSeconds: Invalid value: 31`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"apply"}, c.args...)
			if !slices.Contains(args, "--policies") {
				// A policy that sets no team label.
				args = append(args, "--policies", sidecarPolicy)
			}
			code, stdout, stderr := runCLI(t, "", args...)
			checkCLI(t, code, stdout, stderr, c.code, c.want, c.reject)
			if c.code == 1 && strings.Count(stderr, "denied the request") > 1 {
				t.Errorf("the refusal is printed more than once:\n%s", stderr)
			}
		})
	}
}
