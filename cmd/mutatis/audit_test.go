package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/mutatis-dev/mutatis/audit"
	"github.com/mutatis-dev/mutatis/manifest"
	"github.com/mutatis-dev/mutatis/matching"
	"github.com/mutatis-dev/mutatis/test/webhookserver"
)

// auditFake is a fake cluster holding the audit package's test objects.
func auditFake(t *testing.T) *dynamicfake.FakeDynamicClient {
	t.Helper()
	listKinds := map[schema.GroupVersionResource]string{}
	for _, r := range matching.DefaultTable().Resources() {
		listKinds[r.GroupVersionResource()] = r.Kind + "List"
	}
	set, err := manifest.Load(context.Background(), []string{"../../audit/testdata/cluster.yaml"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var objs []runtime.Object
	for _, o := range set.Objects {
		objs = append(objs, o.Object)
	}
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, objs...)
}

// runAuditCommand runs `mutatis audit ARGS` against the fake cluster and
// returns stdout, stderr and the exit code.
func runAuditCommand(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	cmd := newAuditCommandWith(auditFake(t))
	var stdout, stderr bytes.Buffer
	cmd.SetOut(&stdout)
	cmd.SetErr(&stderr)
	cmd.SetArgs(args)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.ExecuteContext(context.Background())
	code := exitOK
	var ee *exitError
	switch {
	case errors.As(err, &ee):
		code = ee.code
		if ee.err != nil {
			stderr.WriteString(ee.err.Error())
		}
	case err != nil:
		code = exitUsage
		stderr.WriteString(err.Error())
	}
	return stdout.String(), stderr.String(), code
}

func TestAuditCommandExitCodes(t *testing.T) {
	policies := "--policies=../../audit/testdata/policies.yaml"
	cases := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"a report without --fail-on exits 0", []string{policies}, exitOK, "audited 11 objects as CREATE", ""},
		{"--fail-on deny finds the denial", []string{policies, "--fail-on=deny"}, exitProblem, "deny     configmaps", ""},
		{"--fail-on change finds the changes", []string{policies, "--fail-on", "change", "-o", "json"}, exitProblem, `"outcome": "change"`, ""},
		{"--fail-on error finds the ignored error", []string{policies, "--fail-on=error", "-o", "junit"}, exitProblem, "<testsuites", ""},
		{"nothing fails in kube-system", []string{policies, "--fail-on=deny,change,error", "-n", "kube-system"}, exitOK, "unchanged 1", ""},
		{"ValidatingAdmissionPolicies in --policies: a Deny binding's refusal is a deny", []string{"--policies=../../audit/testdata/validating.yaml", "--fail-on=deny"}, exitProblem,
			"ValidatingAdmissionPolicy: deployments.apps \"web\" is forbidden: ValidatingAdmissionPolicy 'at-most-two-replicas' with binding 'at-most-two-replicas' denied r", ""},
		{"--pod-security alone audits the Pods and their controllers at a level", []string{"--pod-security=restricted", "--fail-on=deny"}, exitProblem,
			`deny       pods              team-a/lonely                                   PodSecurity: pods "lonely" is forbidden: violates PodSecurity "restricted:latest"`, ""},
		{"--pod-security refuses an unknown level", []string{"--pod-security=strict"}, exitUsage, "", `--pod-security must be privileged, baseline or restricted (LEVEL[:VERSION]), not "strict"`},
		{"--fail-on validation finds the validations an Audit binding fails", []string{"--policies=../../audit/testdata/validating.yaml", "--fail-on=validation", "-o", "json", "--kinds", "pods"}, exitProblem,
			`"actions": [
            "Audit"
          ],`, ""},
		{"--fail-on refuses an unknown outcome", []string{policies, "--fail-on=warn"}, exitUsage, "", `--fail-on must be change, deny, error or validation, not "warn"`},
		{"policies from files or from the cluster, not both", []string{policies, "--cluster-policies"}, exitUsage, "", "give either --policies PATH… or --cluster-policies"},
		{"an unknown format", []string{policies, "-o", "yaml"}, exitUsage, "", `--output must be table, json, junit or html, not "yaml"`},
		{"an unknown operation", []string{policies, "--operation", "DELETE"}, exitUsage, "", `--operation must be CREATE or UPDATE, not "DELETE"`},
		{"--object explains one object", []string{policies, "--object", "configmap/broken", "-n", "team-a"}, exitOK,
			"configmaps team-a/broken on CREATE: would be denied", ""},
		{"--object of an unknown kind", []string{policies, "--object", "gizmo/x"}, exitUsage, "", `kind "gizmo" is not served`},
		{"--object of a missing object", []string{policies, "--object", "configmap/nope", "-n", "team-a"}, exitUsage, "", `reading configmap/nope`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stdout, stderr, code := runAuditCommand(t, c.args...)
			if code != c.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, c.code, stdout, stderr)
			}
			if !strings.Contains(stdout, c.stdout) {
				t.Errorf("stdout does not contain %q:\n%s", c.stdout, stdout)
			}
			if !strings.Contains(stderr, c.stderr) {
				t.Errorf("stderr does not contain %q:\n%s", c.stderr, stderr)
			}
		})
	}
}

func TestAuditCommandReportFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.html")
	stdout, stderr, code := runAuditCommand(t, "--policies=../../audit/testdata/policies.yaml", "-o", "html", "--report", path)
	if code != exitOK || stdout != "" {
		t.Fatalf("exit %d, stdout %q, stderr %s", code, stdout, stderr)
	}
	if !strings.HasPrefix(stderr, "audited 11 objects") {
		t.Errorf("stderr = %q", stderr)
	}
	page, err := os.ReadFile(path)
	if err != nil || !bytes.Contains(page, []byte("<title>mutatis audit</title>")) {
		t.Errorf("report: %v %.200s", err, page)
	}
}

func TestAuditProgressBar(t *testing.T) {
	var b bytes.Buffer
	bar := progressBar(&b)
	bar(audit.Progress{Resource: "pods", Listed: 1500, Evaluated: 1000, Remaining: 500, Elapsed: 2 * time.Second})
	if got, want := b.String(), "\r\033[Klisted 1500, evaluated 1000 (500/s), 2s left of pods"; got != want {
		t.Errorf("progress %q, want %q", got, want)
	}
	b.Reset()
	bar(audit.Progress{Resource: "pods", Listed: 10, Evaluated: 0, Remaining: -1})
	if got, want := b.String(), "\r\033[Klisted 10, evaluated 0 (0/s)"; got != want {
		t.Errorf("progress %q, want %q", got, want)
	}
}

// With --webhooks the audit runs the whole chain: the test server's
// sidecar injector and label stamper after the policies, and the
// reinvocation round, in which the ServiceAccount plugin mounts the token
// into the injected sidecar (the Pods' namespace has its ServiceAccount).
func TestAuditWithWebhooks(t *testing.T) {
	srv, err := webhookserver.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	hooks := webhookConfigs(t, srv)
	stdout, stderr, code := runAuditCommand(t, "--policies=../../audit/testdata/policies.yaml", "--kinds=pods", "--all-pods", "--webhooks", hooks, "-o", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{`"outcome": "change"`, `"name": "sidecar"`, `stamped-by`, `kube-api-access-`} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the report lacks %s:\n%s", want, stdout)
		}
	}
	if srv.Calls(webhookserver.PathSidecar) == 0 || srv.Calls(webhookserver.PathLabels) == 0 {
		t.Errorf("webhooks not called: sidecar %d, labels %d", srv.Calls(webhookserver.PathSidecar), srv.Calls(webhookserver.PathLabels))
	}
	_, stderr, code = runAuditCommand(t, "--policies=../../audit/testdata/policies.yaml", "--webhooks", "../../audit/testdata/policies.yaml")
	if code != exitUsage || !strings.Contains(stderr, "among the webhook configurations") {
		t.Errorf("--webhooks without a configuration: exit %d: %s", code, stderr)
	}
}

// The ValidatingWebhookConfigurations among --webhooks are called in the
// validating stage: the test server's require-label webhook refuses every
// Pod without the label team, after the policies annotated it.
func TestAuditWithValidatingWebhooks(t *testing.T) {
	srv, err := webhookserver.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	stdout, stderr, code := runAuditCommand(t, "--policies=../../audit/testdata/policies.yaml", "--kinds=pods", "--all-pods", "--webhooks", validatingWebhookConfig(t, srv), "-o", "json", "--fail-on=deny")
	if code != exitProblem {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{`"outcome": "deny"`, `"refusedBy": "ValidatingAdmissionWebhook"`, `"message": "admission webhook \"require-team.example.com\" denied the request: CREATE Pod: the label team is required"`, `"deny": 4`} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the report lacks %s:\n%s", want, stdout)
		}
	}
	if n := srv.Calls(webhookserver.PathRequireLabel); n != 4 {
		t.Errorf("the validating webhook was called %d times, want once per Pod (4)", n)
	}
}

// TestAuditNoCluster checks the error of an audit without a cluster names
// where it looked: the --kubeconfig flag, $KUBECONFIG, or the default file
// (issue 31: "no cluster to audit: stat /nonexistent: …").
func TestAuditNoCluster(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "off") // no process-wide settings from the test
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	missing := filepath.Join(t.TempDir(), "nonexistent")
	for _, c := range []struct {
		name, env string
		args      []string
		want      string
	}{
		{"--kubeconfig", "", []string{"--kubeconfig", missing}, "no cluster to audit: the kubeconfig of --kubeconfig " + missing + " cannot be used: stat " + missing},
		{"$KUBECONFIG", missing, nil, "no cluster to audit: the kubeconfig of $KUBECONFIG (" + missing + ") cannot be used, and this is not a pod in a cluster (give --kubeconfig FILE)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", c.env)
			cmd := newAuditCommand()
			var stderr bytes.Buffer
			cmd.SetOut(&bytes.Buffer{})
			cmd.SetErr(&stderr)
			cmd.SetArgs(append([]string{"--pod-security=baseline"}, c.args...))
			cmd.SilenceUsage, cmd.SilenceErrors = true, true
			err := cmd.ExecuteContext(context.Background())
			var ee *exitError
			if !errors.As(err, &ee) || ee.code != exitUsage || ee.err == nil || !strings.Contains(ee.err.Error(), c.want) {
				t.Errorf("err = %v, want exit %d with %q", err, exitUsage, c.want)
			}
		})
	}
}

// TestAuditBoundFlags checks the flags of the audit's bounds are taken
// and checked.
func TestAuditBoundFlags(t *testing.T) {
	policies := "--policies=../../audit/testdata/policies.yaml"
	for _, c := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{policies, "--request-timeout=5s", "--timeout=1m", "--max-pages=10", "--max-page-bytes=1Mi", "--max-cluster-objects=1000"}, exitOK, ""},
		{[]string{policies, "--max-cluster-objects=1"}, exitUsage, "more than 1 (--max-cluster-objects"},
		{[]string{policies, "--max-page-bytes=lots"}, exitUsage, "--max-page-bytes: quantities must match"},
		{[]string{policies, "--max-pages=-1"}, exitUsage, "must not be negative"},
	} {
		t.Run(strings.Join(c.args[1:], " "), func(t *testing.T) {
			_, stderr, code := runAuditCommand(t, c.args...)
			if code != c.code || !strings.Contains(stderr, c.stderr) {
				t.Errorf("exit %d, stderr %q; want %d, %q", code, stderr, c.code, c.stderr)
			}
		})
	}
}
