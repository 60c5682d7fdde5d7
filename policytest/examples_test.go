package policytest_test

import (
	"net/url"
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
