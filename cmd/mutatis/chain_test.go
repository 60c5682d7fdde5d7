package main

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mutatis-dev/mutatis/test/webhookserver"
)

// webhookConfig is a MutatingWebhookConfiguration named name with one
// webhook on Pods; client is its clientConfig (YAML flow mapping) and
// extra more fields of the webhook.
func webhookConfig(name, webhook, client, extra string) string {
	return fmt.Sprintf(`apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: %s}
webhooks:
- name: %s
  clientConfig: %s
  rules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
  sideEffects: None
  admissionReviewVersions: [v1]
%s`, name, webhook, client, extra)
}

// TestApplyWebhooks runs apply with --webhooks against the test webhook
// server: the whole chain, its explanation, and the errors that name the
// file and field to fix.
func TestApplyWebhooks(t *testing.T) {
	srv, err := webhookserver.Start(t.TempDir(), "sidecar.hooks.svc")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	other, err := webhookserver.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	other.Close()
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
	const sidecarPolicy = "../../examples/sidecar-injection/policy.yaml"
	const labelledPod = "../../examples/sidecar-injection/testdata/labelled-pod.yaml"
	cases := []struct {
		name   string
		args   []string
		code   int
		want   []string
		reject []string
	}{
		{name: "a webhook's sidecar and a policy's both get the token mount", code: 0,
			args: []string{"--webhooks", write("sidecar.yaml", webhookConfig("hooks", "sidecar.example.com", url(webhookserver.PathSidecar), "")), "--explain"},
			want: []string{"name: sidecar\n", "name: log-shipper\n", "mountPath: /etc/istio/proxy\n      name: istio-envoy\n    - mountPath: /var/run/secrets/kubernetes.io/serviceaccount\n      name: kube-api-access-xxxxx",
				`explain: pass 1: webhook "sidecar.example.com" of "hooks": called (AdmissionReview v1, `,
				`): admitted, patch changed the object: [{"op":"add","path":"/spec/containers/-"`,
				"explain: pass 2: the admission chain is reinvoked",
				"explain: pass 2: admission plugin ServiceAccount: changed the object",
				`explain: pass 2: webhook "sidecar.example.com" of "hooks": skipped: not reinvoked`}},
		{name: "a webhook skipped by its objectSelector", code: 0,
			args: []string{"--webhooks", write("selector.yaml", webhookConfig("hooks", "labels.example.com", url(webhookserver.PathLabels), "  objectSelector: {matchLabels: {team: none}}\n")), "--explain"},
			want: []string{`explain: pass 1: webhook "labels.example.com" of "hooks": skipped: objectSelector does not match`}, reject: []string{"stamped-by"}},
		{name: "a webhook's denial", code: 1,
			args: []string{"--webhooks", write("deny.yaml", webhookConfig("hooks", "deny.example.com", url(webhookserver.PathDeny), ""))},
			want: []string{`admission webhook "deny.example.com" denied the request: pods may not run as root`}},
		{name: "an unreachable webhook under failurePolicy Fail names its configuration", code: 1,
			args: []string{"--webhooks", write("down.yaml", webhookConfig("hooks", "down.example.com", fmt.Sprintf("{url: %q, caBundle: %s}", other.URL+"/x", ca), ""))},
			want: []string{`Internal error occurred: failed calling webhook "down.example.com": failed to call webhook: Post "` + other.URL + `/x?timeout=10s"`,
				`down.yaml#0: MutatingWebhookConfiguration "hooks": webhooks[0].clientConfig: webhook "down.example.com" failed closed (failurePolicy Fail)`}},
		{name: "an unreachable webhook under failurePolicy Ignore is a note", code: 0,
			args: []string{"--webhooks", write("down-ignore.yaml", webhookConfig("hooks", "down.example.com", fmt.Sprintf("{url: %q, caBundle: %s}", other.URL+"/x", ca), "  failurePolicy: Ignore\n")), "--explain"},
			want: []string{`webhook "down.example.com" failed open (failurePolicy Ignore)`, `: called (AdmissionReview v1, `, "failed open (failurePolicy Ignore): failed calling webhook"}},
		{name: "a caBundle that did not sign the webhook's certificate", code: 1,
			args: []string{"--webhooks", write("bad-ca.yaml", webhookConfig("hooks", "sidecar.example.com", fmt.Sprintf("{url: %q, caBundle: %s}", srv.URL+webhookserver.PathSidecar, base64.StdEncoding.EncodeToString(other.CABundle)), ""))},
			want: []string{"x509: certificate signed by unknown authority", `bad-ca.yaml#0: MutatingWebhookConfiguration "hooks": webhooks[0].clientConfig`}},
		{name: "a service reached through --service-url", code: 0,
			args: []string{"--webhooks", write("service.yaml", webhookConfig("hooks", "sidecar.example.com", fmt.Sprintf("{service: {namespace: hooks, name: sidecar, path: %s}, caBundle: %s}", webhookserver.PathSidecar, ca), "")),
				"--service-url", "hooks/sidecar=https://" + srv.Addr()},
			want: []string{"name: sidecar\n", "sidecar.example.com/injected"}},
		{name: "a slow webhook past its timeoutSeconds fails closed", code: 1,
			args: []string{"--webhooks", write("slow.yaml", webhookConfig("hooks", "slow.example.com", url(webhookserver.PathSlow+"/30s"), "  timeoutSeconds: 1\n"))},
			want: []string{`failed calling webhook "slow.example.com"`, "context deadline exceeded", `slow.yaml#0: MutatingWebhookConfiguration "hooks": webhooks[0].clientConfig: webhook "slow.example.com" failed closed`}},
		{name: "a broken answer under failurePolicy Ignore fails open", code: 0,
			args: []string{"--webhooks", write("broken.yaml", webhookConfig("hooks", "broken.example.com", url(webhookserver.PathBroken), "  failurePolicy: Ignore\n")), "--explain"},
			want: []string{`webhook "broken.example.com" of "hooks": called (AdmissionReview v1, `, "failed open (failurePolicy Ignore)", "name: log-shipper"}},
		{name: "a bad uid fails closed", code: 1,
			args: []string{"--webhooks", write("bad-uid.yaml", webhookConfig("hooks", "uid.example.com", url(webhookserver.PathBadUID), ""))},
			want: []string{`failed calling webhook "uid.example.com"`, "expected response.uid="}},
		{name: "a patch that is not a JSON patch fails closed", code: 1,
			args: []string{"--webhooks", write("merge.yaml", webhookConfig("hooks", "merge.example.com", url(webhookserver.PathMergePatch), ""))},
			want: []string{`failed calling webhook "merge.example.com"`, "received undecodable patch in webhook response"}},
		{name: "a malformed configuration names its file and field", code: 2,
			args: []string{"--webhooks", write("bad.yaml", webhookConfig("bad", "slow.example.com", url("/x"), "  timeoutSeconds: 31\n"))},
			want: []string{`bad.yaml#0: MutatingWebhookConfiguration "bad": webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds`}},
		{name: "a configuration that does not decode", code: 2,
			args: []string{"--webhooks", write("typo.yaml", webhookConfig("typo", "t.example.com", url("/x"), "  reinvocationPolcy: IfNeeded\n"))},
			want: []string{`typo.yaml#0`, `unknown field "webhooks[0].reinvocationPolcy"`}},
		{name: "--webhooks takes nothing but webhook configurations", code: 2,
			args: []string{"--webhooks", sidecarPolicy},
			want: []string{`policy.yaml#0: MutatingAdmissionPolicy "inject-logging-sidecar": a MutatingAdmissionPolicy among the webhook configurations (policies go with the policies)`}},
		{name: "a malformed --service-url", code: 2,
			args: []string{"--webhooks", write("ok.yaml", webhookConfig("hooks", "labels.example.com", url(webhookserver.PathLabels), "")), "--service-url", "hooks/sidecar=http://127.0.0.1:1"},
			want: []string{`--service-url: service URL "hooks/sidecar=http://127.0.0.1:1": the URL must be https`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"apply", "-f", labelledPod, "--policies", sidecarPolicy}, c.args...)
			code, stdout, stderr := runCLI(t, "", args...)
			checkCLI(t, code, stdout, stderr, c.code, c.want, c.reject)
		})
	}
}

// TestApplySidecarGetsTheTokenMount: without any webhook, the chain's
// second round gives a policy's sidecar what the ServiceAccount plugin
// gives every container, as kube-apiserver does.
func TestApplySidecarGetsTheTokenMount(t *testing.T) {
	code, stdout, stderr := runCLI(t, "", "apply", "-f", "../../examples/sidecar-injection/testdata/labelled-pod.yaml", "--policies", "../../examples/sidecar-injection/policy.yaml")
	checkCLI(t, code, stdout, stderr, 0, []string{"    - mountPath: /var/log/app\n      name: app-logs\n    - mountPath: /var/run/secrets/kubernetes.io/serviceaccount\n      name: kube-api-access-xxxxx\n"}, nil)
	if n := strings.Count(stdout, "name: kube-api-access-xxxxx"); n != 3 {
		t.Errorf("%d mentions of the token volume, want 3 (two mounts, the volume):\n%s", n, stdout)
	}
}

// TestTestWebhooks runs the example suite with webhooks through `mutatis
// test`, its service mapped with --service-url (over the suite's own
// mapping), and --webhooks given to a suite that names none.
func TestTestWebhooks(t *testing.T) {
	const dir = "../../examples/webhook-and-policy/"
	srv, err := webhookserver.StartFiles(dir+"testdata/certs/tls.crt", dir+"testdata/certs/tls.key", dir+"testdata/certs/ca.crt")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	mapping := "hooks/hooks=https://" + srv.Addr()
	suite := filepath.Join(t.TempDir(), "flags.mutatis-test.yaml")
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(suite, []byte(`apiVersion: mutatis.dev/v1alpha1
kind: PolicyTest
policies: [`+abs+`/policy.yaml]
cases:
- name: the webhooks of --webhooks run
  object: {apiVersion: v1, kind: Pod, metadata: {name: web, namespace: shop, labels: {mesh: enabled}}, spec: {containers: [{name: app, image: nginx}]}}
  expect:
    applied: [webhook:mesh/sidecar.mesh.example.com]
    objectContains: {metadata: {annotations: {sidecar.example.com/injected: "true"}}}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{name: "the example suite with its service mapped", args: []string{"test", "-v", "--service-url", mapping, dir + "testdata"}, code: 0,
			want: []string{"ok   webhook-and-policy", "4 cases"}},
		{name: "without the mapping the suite's own address is unreachable", args: []string{"test", "--service-url", "hooks/hooks=https://127.0.0.1:1", dir + "testdata"}, code: 1,
			want: []string{`failed calling webhook "sidecar.mesh.example.com"`}},
		{name: "--webhooks for a suite that names none", args: []string{"test", "--webhooks", dir + "webhooks.yaml", "--service-url", mapping, suite}, code: 0,
			want: []string{"1 cases"}},
		{name: "a bad --webhooks file", args: []string{"test", "--webhooks", dir + "policy.yaml", suite}, code: 2,
			want: []string{`a MutatingAdmissionPolicy among the webhook configurations`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, "", c.args...)
			checkCLI(t, code, stdout, stderr, c.code, c.want, nil)
		})
	}
}
