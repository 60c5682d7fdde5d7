package policytest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// copyTree copies the directory src to dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// edit replaces old by new in the file p, which must hold old.
func edit(t *testing.T, p, old, new string) {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), old) {
		t.Fatalf("%s lacks %q", p, old)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(data), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// mutatingKat are kat's examples of MutatingAdmissionPolicies.
var mutatingKat = []string{"testdata/kat/add-default-labels", "testdata/kat/mutating-with-binding", "testdata/kat/namespace-selector-binding-mutating", "testdata/kat/sidecar-injection"}

// TestKatSuites runs kat's own mutating examples (testdata/kat) through
// mutatis test's reading of kat's file names.
func TestKatSuites(t *testing.T) {
	t.Run("discovery finds the tests directories beside policies", func(t *testing.T) {
		files, err := Discover([]string{"testdata/kat"})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"testdata/kat/add-default-labels/tests", "testdata/kat/mutating-with-binding/tests", "testdata/kat/namespace-selector-binding-mutating/tests", "testdata/kat/sidecar-injection/tests", "testdata/kat/validating/block-pod-exec/tests"}
		if len(files) != 21 || strings.Join(files[:5], " ") != strings.Join(want, " ") {
			t.Errorf("Discover = %v, want %v", files, want)
		}
	})
	t.Run("as they are, kube-apiserver would refuse their policies", func(t *testing.T) {
		rep, out := runText(t, Options{}, mutatingKat...)
		if _, _, _, bad := rep.Counts(); bad != 4 {
			t.Errorf("%d bad suites, want 4:\n%s", bad, out)
		}
		for _, w := range []string{
			`testdata/kat/add-default-labels/tests: policies[1]: Invalid value: "policy.yaml": testdata/kat/add-default-labels/policy.yaml#0: MutatingAdmissionPolicy "add-default-labels": spec.reinvocationPolicy: Required value`,
			`MutatingAdmissionPolicyBinding "add-label-from-params-binding": spec.paramRef.parameterNotFoundAction: Required value`,
		} {
			if !strings.Contains(out, w) {
				t.Errorf("output lacks %q:\n%s", w, out)
			}
		}
	})
	// With the two fields kube-apiserver requires, the suites run; one
	// policy still does not compile in kube-apiserver's CEL environment
	// (a map literal of mixed value types).
	dir := t.TempDir()
	copyTree(t, "testdata/kat", dir)
	if err := os.RemoveAll(filepath.Join(dir, "validating")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"add-default-labels", "mutating-with-binding", "namespace-selector-binding-mutating", "sidecar-injection"} {
		edit(t, filepath.Join(dir, p, "policy.yaml"), "\nspec:\n", "\nspec:\n  reinvocationPolicy: Never\n")
	}
	edit(t, filepath.Join(dir, "mutating-with-binding", "binding.yaml"), "    namespace: default", "    namespace: default\n    parameterNotFoundAction: Allow")
	t.Run("with reinvocationPolicy set they pass as in kat", func(t *testing.T) {
		rep, out := runText(t, Options{Run: nil}, dir)
		passed, failed, _, bad := rep.Counts()
		if passed != 7 || failed != 0 || bad != 1 {
			t.Errorf("passed %d, failed %d, bad %d; want 7, 0, 1:\n%s", passed, failed, bad, out)
		}
		for _, w := range []string{
			"ok   add-default-labels\t" + dir + "/add-default-labels/tests\t2 cases\n",
			"ok   mutating-with-binding\t", "ok   namespace-selector-binding-mutating\t",
			"compilation failed: ERROR: <input>:8:16: expected type 'string' but found 'list(map(string, dyn))'",
		} {
			if !strings.Contains(out, w) {
				t.Errorf("output lacks %q:\n%s", w, out)
			}
		}
	})
	t.Run("a gold file that differs fails with the diff", func(t *testing.T) {
		edit(t, filepath.Join(dir, "add-default-labels", "tests", "add-default-labels.no-labels.gold.yaml"), "environment: dev", "environment: staging")
		_, out := runText(t, Options{}, filepath.Join(dir, "add-default-labels"))
		for _, w := range []string{"--- FAIL: add-default-labels/add-default-labels.no-labels", "-    environment: staging\n", "+    environment: dev\n"} {
			if !strings.Contains(out, w) {
				t.Errorf("output lacks %q:\n%s", w, out)
			}
		}
	})
}

// TestKatCaseParts: kat's request file (operation, user, namespace object),
// a denial with its message file, an UPDATE from an old object, and what
// mutatis cannot read of kat's format, named by file.
func TestKatCaseParts(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("policy.yaml", `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: owner}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [configmaps]}
  reinvocationPolicy: Never
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: 'Object{metadata: Object.metadata{labels: {"owner": request.userInfo.username, "was": oldObject == null ? "none" : string(oldObject.data.v)}}}'
`)
	write("binding.yaml", `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: owner-in-team-namespaces}
spec:
  policyName: owner
  matchResources:
    namespaceSelector: {matchLabels: {team: shop}}
`)
	write("tests/owner.elsewhere.object.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: other}\n")
	write("tests/owner.elsewhere.gold.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: other}\n")
	write("tests/owner.by-alice.object.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")
	write("tests/owner.by-alice.gold.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: shop, labels: {owner: alice, was: none}}\n")
	write("tests/owner.by-alice.request.yaml", "operation: CREATE\nuserInfo: {username: alice, groups: [dev]}\nnamespaceObject:\n  metadata: {name: shop, labels: {team: shop}}\n")
	write("tests/owner.update.object.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {v: new}\n")
	write("tests/owner.update.oldObject.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {v: old}\n")
	write("tests/owner.update.gold.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: shop, labels: {owner: admin, was: old}}\ndata: {v: new}\n")
	write("tests/owner.update.request.yaml", "namespaceObject:\n  metadata: {name: shop, labels: {team: shop}}\n")
	write("tests/owner.no-data.deny.object.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")
	write("tests/owner.no-data.deny.oldObject.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")
	write("tests/owner.no-data.deny.request.yaml", "operation: UPDATE\nnamespaceObject:\n  metadata: {name: shop, labels: {team: shop}}\n")
	write("tests/owner.no-data.deny.message.txt", "no such key: data\n")
	files, err := Discover([]string{dir})
	if err != nil || len(files) != 1 || files[0] != filepath.Join(dir, "tests") {
		t.Fatalf("Discover = %v, %v", files, err)
	}
	rep, out := runText(t, Options{}, dir)
	if passed, failed, _, bad := rep.Counts(); passed != 4 || failed+bad != 0 {
		t.Errorf("passed %d, failed %d, bad %d; want 4, 0, 0:\n%s", passed, failed, bad, out)
	}

	for _, c := range []struct{ file, content, want string }{
		{"tests/owner.mock.authorizer.yaml", "- {verb: create, decision: allow}\n", "tests/owner.mock.authorizer.yaml: the authorizer's decisions are those of the request's user"},
		{"tests/owner.gone.oldObject.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n", "ok   "},
		{"tests/owner.typo.request.yaml", "operaton: CREATE\n", `tests/owner.typo.request.yaml: operaton: unknown field; did you mean "operation"?`},
	} {
		write(c.file, c.content)
		_, out := runText(t, Options{}, dir)
		if !strings.Contains(out, c.want) {
			t.Errorf("%s: output lacks %q:\n%s", c.file, c.want, out)
		}
		if err := os.Remove(filepath.Join(dir, c.file)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestKatValidatingSuites runs kat's ValidatingAdmissionPolicy examples
// (testdata/kat/validating) as they are: those kube-apiserver agrees
// with pass; where kat's answer is not kube-apiserver's, mutatis says
// why (testdata/kat/README.md lists each case).
func TestKatValidatingSuites(t *testing.T) {
	rep, out := runText(t, Options{}, "testdata/kat/validating")
	passed, failed, _, bad := rep.Counts()
	if passed != 28 || failed != 3 || bad != 4 {
		t.Errorf("passed %d, failed %d, bad %d; want 28, 3, 4:\n%s", passed, failed, bad, out)
	}
	for _, w := range []string{
		"ok   delete-protection\ttestdata/kat/validating/delete-protection/tests\t2 cases\n",
		"ok   replica-limit\t", "ok   require-labels-with-params\t", "ok   prevent-owner-change\t", "ok   block-team-ci-service-accounts\t",
		// A ValidatingAdmissionPolicy without matchConstraints, a reason
		// kube-apiserver does not know, a kind it does not serve.
		`block-pod-exec/policy.yaml#0: ValidatingAdmissionPolicy "block-pod-exec": spec.matchConstraints: Required value`,
		`check-authorizer/policy.yaml#0: ValidatingAdmissionPolicy "check-authorizer": spec.matchConstraints: Required value`,
		`spec.validations[0].reason: Unsupported value: "Warn"`,
		`deprecated-api-warn/tests: cases[0].object: kind apps/v1beta1, Kind=Deployment is not served by Kubernetes 1.37`,
		// matchConditions see no namespaceObject in kube-apiserver.
		"--- FAIL: conditional-policy/conditional.dev-single-replica.allow",
		"resulted in error: no such key: metadata",
		// parameterNotFoundAction Deny denies with kube-apiserver's text.
		"--- FAIL: replica-limit-with-params/replica-limit-params.no-params.deny",
		"denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction",
		// The default namespace has no label the binding selects.
		"--- FAIL: require-owner-label/require-owner-label.without-label.deny", "    denied: the request was admitted\n",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q", w)
		}
	}
	if t.Failed() {
		t.Log(out)
	}

	// Mended as kube-apiserver wants them, the warn, audit, CONNECT and
	// authorizer examples run: warnings.txt, annotations.yaml, the
	// options of a CONNECT, authorizer.yaml.
	dir := t.TempDir()
	copyTree(t, "testdata/kat/validating", dir)
	edit(t, filepath.Join(dir, "track-privileged-audit", "policy.yaml"), "reason: Warn", "reason: Forbidden")
	edit(t, filepath.Join(dir, "deprecated-api-warn", "policy.yaml"), `apiVersions: ["v1beta1", "v1beta2"]`, `apiVersions: ["v1"]`)
	edit(t, filepath.Join(dir, "deprecated-api-warn", "tests", "deprecated-api.old-version.warn.object.yaml"), "apps/v1beta1", "apps/v1")
	edit(t, filepath.Join(dir, "deprecated-api-warn", "tests", "deprecated-api.old-version.warn.object.yaml"), "  replicas: 1\n", "  replicas: 1\n  selector: {matchLabels: {app: test}}\n")
	edit(t, filepath.Join(dir, "deprecated-api-warn", "tests", "deprecated-api.old-version.warn.warnings.txt"), "apps/v1beta1", "apps/v1")
	edit(t, filepath.Join(dir, "block-pod-exec", "policy.yaml"), "spec:\n", "spec:\n  matchConstraints:\n    resourceRules:\n    - {apiGroups: [\"\"], apiVersions: [v1], operations: [CONNECT], resources: [pods/exec]}\n")
	edit(t, filepath.Join(dir, "check-authorizer", "policy.yaml"), "spec:\n", "spec:\n  matchConstraints:\n    resourceRules:\n    - {apiGroups: [\"\"], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}\n")
	edit(t, filepath.Join(dir, "check-authorizer", "tests", "allowed.request.yaml"), `username: admin`, `username: alice`)
	edit(t, filepath.Join(dir, "check-authorizer", "tests", "allowed.request.yaml"), `groups: ["system:masters"]`, `groups: ["dev"]`)
	edit(t, filepath.Join(dir, "check-authorizer", "tests", "simple.deny.message.txt"), "validation failed: ", "")
	for _, name := range []string{"track-privileged-audit", "deprecated-api-warn", "block-pod-exec", "check-authorizer"} {
		rep, out := runText(t, Options{}, filepath.Join(dir, name))
		if passed, failed, _, bad := rep.Counts(); passed != 2 && !(name == "deprecated-api-warn" && passed == 1) || failed+bad != 0 {
			t.Errorf("%s: passed %d, failed %d, bad %d:\n%s", name, passed, failed, bad, out)
		}
	}
	// A wrong expectation fails naming what kube-apiserver answered.
	edit(t, filepath.Join(dir, "track-privileged-audit", "tests", "track-privileged.privileged-pod.audit.annotations.yaml"), "container: app", "container: sidecar")
	edit(t, filepath.Join(dir, "deprecated-api-warn", "tests", "deprecated-api.old-version.warn.warnings.txt"), "migrate", "upgrade")
	_, out = runText(t, Options{}, dir)
	for _, w := range []string{
		`auditAnnotations: audit annotation "track-privileged-audit/high-privilege-pod" is "Pod privileged-pod has privileged container: app", want "Pod privileged-pod has privileged container: sidecar"`,
		`warnings: no warning matches "^Validation failed for ValidatingAdmissionPolicy 'deprecated-api-warn' with binding '[^']*': Using deprecated API version apps/v1\\. Please upgrade to apps/v1$"; warnings:` + "\n    Validation failed for ValidatingAdmissionPolicy 'deprecated-api-warn' with binding 'deprecated-api-warn-binding': Using deprecated API version apps/v1. Please migrate to apps/v1",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}
