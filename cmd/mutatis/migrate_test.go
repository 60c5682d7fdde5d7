package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mutatis-dev/mutatis/migrate"
	"github.com/mutatis-dev/mutatis/test/webhookserver"
)

// webhookConfigs writes a MutatingWebhookConfiguration of the test
// server's sidecar injector and label stamper (named as given) for Pods.
func webhookConfigs(t *testing.T, srv *webhookserver.Server) string {
	t.Helper()
	ca := base64.StdEncoding.EncodeToString(srv.CABundle)
	hook := func(name, path string) string {
		return fmt.Sprintf(`
- name: %s
  clientConfig: {url: "%s%s", caBundle: %s}
  rules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [pods]}]
  sideEffects: None
  admissionReviewVersions: [v1]`, name, srv.URL, path, ca)
	}
	doc := "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\nmetadata: {name: injector}\nwebhooks:" +
		hook("sidecar.example.com", webhookserver.PathSidecar) + hook("labels.example.com", webhookserver.PathLabels) + "\n"
	path := filepath.Join(t.TempDir(), "webhooks.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// migrate-check runs each Pod through the chain with the test server's
// webhooks and through the chain where policies replace them, and reports
// the objects whose stored result or refusal differ.
func TestMigrateCheck(t *testing.T) {
	srv, err := webhookserver.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	hooks := webhookConfigs(t, srv)
	const td = "testdata/migrate/"
	args := []string{"migrate-check", "--webhooks", hooks, "--policies", td + "policies.yaml", "--resources", td + "resources.yaml", "-f", td + "pods.yaml"}

	for _, tc := range []struct {
		name, golden string
		args         []string
	}{
		// The policy replaces the sidecar injector only: the label
		// stamper stays. web is stored the same (the sidecar then gets
		// its service-account token mount from the reinvocation round,
		// on both sides); pinned gets another image; odd is refused.
		{"the sidecar webhook replaced", "replaced.txt", []string{"--replaces", "inject-sidecar=sidecar.example.com"}},
		// Without --replaces the policies replace every webhook: the
		// stamper's label is then missing from every stored Pod.
		{"every webhook replaced", "all-replaced.txt", []string{"-v"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, "", append(append([]string{}, args...), tc.args...)...)
			if code != exitProblem {
				t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			checkGolden(t, td+tc.golden, stdout)
		})
	}

	t.Run("json, and the sidecar's token mount on both sides", func(t *testing.T) {
		code, stdout, stderr := runCLI(t, "", append(append([]string{}, args...), "--replaces", "inject-sidecar=injector/sidecar.example.com", "-o", "json")...)
		if code != exitProblem {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		var rep migrate.Report
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
			t.Fatal(err)
		}
		web := rep.Results[0]
		if web.Difference != migrate.Same {
			t.Fatalf("web: %s\n%s", web.Difference, web.Diff)
		}
		for side, o := range map[string]migrate.Outcome{"webhooks": web.Webhooks, "policies": web.Policies} {
			b, _ := json.Marshal(o.Object)
			if !strings.Contains(string(b), `"name":"sidecar","resources":{},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","volumeMounts":[{"mountPath":"/etc/istio/proxy","name":"istio-envoy"},{"mountPath":"/var/run/secrets/kubernetes.io/serviceaccount","name":"kube-api-access-`) {
				t.Errorf("with the %s: the sidecar lacks its defaults or its token mount: %s", side, b)
			}
		}
	})

	code, _, stderr := runCLI(t, "", "migrate-check", "--webhooks", td+"pods.yaml", "--policies", td+"policies.yaml", "-f", td+"pods.yaml")
	if want := td + `pods.yaml#0: Pod "web": a Pod among the webhook configurations (other objects go with the resources)`; code != exitUsage || !strings.Contains(stderr, want) {
		t.Errorf("objects in --webhooks: exit %d, want 2 and %q: %s", code, want, stderr)
	}
	empty := filepath.Join(t.TempDir(), "empty.yaml")
	if err := os.WriteFile(empty, []byte("# nothing\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runCLI(t, "", "migrate-check", "--webhooks", empty, "--policies", td+"policies.yaml", "-f", td+"pods.yaml")
	if want := "--webhooks " + empty + ": no MutatingWebhookConfiguration found"; code != exitUsage || !strings.Contains(stderr, want) {
		t.Errorf("no configuration: exit %d, want 2 and %q: %s", code, want, stderr)
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"--replaces", "inject-sidecar"}, `--replaces "inject-sidecar": want POLICY=WEBHOOK`},
		{[]string{"--replaces", "nope=sidecar.example.com"}, `no MutatingAdmissionPolicy "nope" in --policies (have: inject-sidecar, refuse-labelled)`},
		{[]string{"--replaces", "inject-sidecar=nope"}, `no webhook "nope" in --webhooks (have: injector/sidecar.example.com, injector/labels.example.com)`},
		{[]string{"--operation", "CONNECT"}, `--operation must be CREATE, UPDATE or DELETE, not "CONNECT"`},
		{[]string{"-f", td + "policies.yaml"}, "4 MutatingAdmissionPolicies or bindings among the objects: give them with --policies"},
		{[]string{"-o", "yaml"}, `--output must be text or json, not "yaml"`},
		{[]string{"--service-url", "x"}, `--service-url: service URL "x": want NS/NAME[:PORT]=URL`},
	} {
		code, _, stderr := runCLI(t, "", append(append([]string{}, args...), bad.args...)...)
		if code != exitUsage || !strings.Contains(stderr, bad.want) {
			t.Errorf("%q: exit %d, want 2 and %q:\n%s", bad.args, code, bad.want, stderr)
		}
	}
}

// validatingWebhookConfig writes a ValidatingWebhookConfiguration of the
// test server's require-label webhook, requiring the label team on Pods.
func validatingWebhookConfig(t *testing.T, srv *webhookserver.Server) string {
	t.Helper()
	doc := fmt.Sprintf(`apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: team-check}
webhooks:
- name: require-team.example.com
  clientConfig: {url: "%s%s/team", caBundle: %s}
  rules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [pods]}]
  sideEffects: None
  admissionReviewVersions: [v1]
`, srv.URL, webhookserver.PathRequireLabel, base64.StdEncoding.EncodeToString(srv.CABundle))
	path := filepath.Join(t.TempDir(), "validating-webhooks.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// A ValidatingAdmissionPolicy replacing a validating webhook: each Pod
// through the chain with the webhook and through the chain with the
// policy in its place, refusals compared by message and code, or by
// decision alone with --same-decision.
func TestMigrateCheckValidating(t *testing.T) {
	srv, err := webhookserver.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	const td = "testdata/migrate/validating/"
	args := []string{"migrate-check", "--webhooks", validatingWebhookConfig(t, srv), "--policies", td + "policies.yaml",
		"--resources", "testdata/migrate/resources.yaml", "-f", td + "pods.yaml", "--replaces", "require-team=require-team.example.com", "-v"}
	for _, tc := range []struct {
		name, golden string
		args         []string
	}{
		// labelled is stored alike; bare is refused by both, in other
		// words and codes; empty-team is refused by the webhook only.
		{"by message", "check.txt", nil},
		{"by decision", "same-decision.txt", []string{"--same-decision"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, "", append(append([]string{}, args...), tc.args...)...)
			if code != exitProblem {
				t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			checkGolden(t, td+tc.golden, stdout)
		})
	}
	// DELETE: the Pods deleted, the old object each Pod; neither the
	// webhook nor the policy is for DELETE, both admit every one.
	if code, stdout, stderr := runCLI(t, "", append(append([]string{}, args...), "--operation", "DELETE")...); code != 0 || !strings.Contains(stdout, "0 stored differently, 0 refused differently, 0 failed") {
		t.Errorf("DELETE: exit %d, want 0 and no difference\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	code, _, stderr := runCLI(t, "", append(append([]string{}, args...), "--replaces", "require-team=nope")...)
	if want := `--replaces require-team=nope: no webhook "nope" in --webhooks (have: team-check/require-team.example.com)`; code != exitUsage || !strings.Contains(stderr, want) {
		t.Errorf("exit %d, want 2 and %q: %s", code, want, stderr)
	}
}
