package policytest_test

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/mutatis-dev/mutatis/policytest"
	"github.com/mutatis-dev/mutatis/test/webhookserver"
	"github.com/mutatis-dev/mutatis/webhookclient"
)

// TestExamples runs the suites of every example policy (make test runs
// them in CI).
func TestExamples(t *testing.T) {
	policytest.Run(t, "../examples")
}

// TestWebhookExample runs the suite of examples/webhook-and-policy, whose
// webhooks the test webhook server serves with the example's certificate
// (its caBundle), the service mapped to it as --service-url would.
func TestWebhookExample(t *testing.T) {
	const dir = "../examples/webhook-and-policy/testdata/"
	srv, err := webhookserver.StartFiles(dir+"certs/tls.crt", dir+"certs/tls.key", dir+"certs/ca.crt")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	u, err := url.Parse("https://" + srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	policytest.RunWith(t, policytest.Options{ServiceURLs: webhookclient.ServiceURLs{{Namespace: "hooks", Name: "hooks"}: u}}, dir)
	if srv.Calls(webhookserver.PathSidecar) == 0 || srv.Calls(webhookserver.PathReadsPolicy) == 0 {
		t.Errorf("the webhooks were not called: sidecar %d, reads-policy %d", srv.Calls(webhookserver.PathSidecar), srv.Calls(webhookserver.PathReadsPolicy))
	}
}

// TestValidatingWebhookSuite: a suite's webhooks may be validating ones;
// their refusal is the case's denial (after the policies), their
// warnings its warnings; applied and notApplied name them.
func TestValidatingWebhookSuite(t *testing.T) {
	srv, err := webhookserver.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := t.TempDir()
	hooks := fmt.Sprintf(`apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: require-team}
webhooks:
- name: team.example.com
  clientConfig: {url: %q, caBundle: %s}
  rules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
  sideEffects: None
  admissionReviewVersions: [v1]
`, srv.URL+webhookserver.PathRequireLabel+"/team", base64.StdEncoding.EncodeToString(srv.CABundle))
	policy := `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: team-label}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
  matchConditions: [{name: labelled, expression: "has(object.metadata.labels) && 'inject-team' in object.metadata.labels"}]
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
	suite := `apiVersion: mutatis.dev/v1alpha1
kind: PolicyTest
metadata: {name: validating-webhook}
policies: [policy.yaml]
webhooks: [hooks.yaml]
defaults: {namespace: shop}
cases:
- name: the policy sets the label the webhook requires
  object: {apiVersion: v1, kind: Pod, metadata: {name: web, labels: {inject-team: "yes"}}, spec: {containers: [{name: app, image: nginx}]}}
  expect:
    objectContains: {metadata: {labels: {team: web}}}
    applied: [team-label, webhook:require-team/team.example.com]
- name: without the policy the webhook refuses
  object: {apiVersion: v1, kind: Pod, metadata: {name: web}, spec: {containers: [{name: app, image: nginx}]}}
  expect:
    denied:
      code: 403
      message: 'admission webhook "team.example.com" denied the request: CREATE Pod: the label team is required'
    notApplied: [webhook:require-team]
`
	for name, text := range map[string]string{"hooks.yaml": hooks, "policy.yaml": policy, "validating.mutatis-test.yaml": suite} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	policytest.Run(t, dir)
	if n := srv.Calls(webhookserver.PathRequireLabel); n == 0 {
		t.Error("the validating webhook was not called")
	}
}
