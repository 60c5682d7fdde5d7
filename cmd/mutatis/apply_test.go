package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestApplyPatchKeepsListOperationsInOrder: removing two containers must
// remove the higher index first, or the second removal cannot apply.
func TestApplyPatchKeepsListOperationsInOrder(t *testing.T) {
	const td = "testdata/apply/"
	for i := 0; i < 5; i++ { // the patch generator iterates maps: repeat
		code, stdout, stderr := runCLI(t, "", "apply", "-f", td+"pod-with-debug.yaml", "--policies", td+"strip-debug.yaml", "-o", "patch")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		var ops []struct{ Op, Path string }
		if err := json.Unmarshal([]byte(stdout), &ops); err != nil {
			t.Fatal(err)
		}
		if len(ops) != 2 || ops[0] != (struct{ Op, Path string }{"remove", "/spec/containers/3"}) || ops[1].Path != "/spec/containers/2" {
			t.Fatalf("patch %s, want the removal of /spec/containers/3 then /spec/containers/2", stdout)
		}
	}
}

// TestApplyRefusesWhatTheAPIServerRefuses: a policy kube-apiserver would
// not create (its CEL does not compile at create time) is bad input, not a
// policy to evaluate.
func TestApplyRefusesWhatTheAPIServerRefuses(t *testing.T) {
	const td = "testdata/apply/"
	code, _, stderr := runCLI(t, "", "apply", "-f", td+"pod-with-debug.yaml", "--policies", td+"invalid-variable.yaml")
	if code != 2 {
		t.Fatalf("exit %d, want 2: %s", code, stderr)
	}
	for _, want := range []string{
		`invalid-variable.yaml#0: MutatingAdmissionPolicy "badvar": spec.variables[0].expression`,
		"<input>:1:27: undeclared reference to 'Object.spec.initContainers'",
		" | ..........................^",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

// apply prints the findings of lint's schema-aware checks as warnings,
// then runs the request: here the kubernetes.io example, whose unguarded
// matchCondition lint warns about, is denied for that very read.
func TestApplyPrintsLintFindings(t *testing.T) {
	code, _, stderr := runCLI(t, "", "apply", "-f", "testdata/apply/pod-with-debug.yaml", "--policies", "../../lint/testdata/corpus/k8s-docs-applyconfiguration.yaml")
	checkCLI(t, code, "", stderr, exitProblem, []string{
		"warning: lint error: ../../lint/testdata/corpus/k8s-docs-applyconfiguration.yaml#0 (line 32:21)",
		"may not mutate atomic arrays, maps or structs: .spec.initContainers[0].args",
		"warning: lint warning: ",
		`object.spec.initContainers is optional in the schema of v1 Pod and often absent: on objects without it the read fails with "no such key: initContainers"`,
		`denied request: expression '!object.spec.initContainers.exists(ic, ic.name == "mesh-proxy")' resulted in error: no such key: initContainers`,
	}, nil)
}

// TestApplyWarnsOfIgnoredErrors: an error that failurePolicy Ignore drops
// admits the object as kube-apiserver would, and is printed as a warning.
func TestApplyWarnsOfIgnoredErrors(t *testing.T) {
	const td = "../../policytest/testdata/ignored/"
	const configMap = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: shop}\n"
	code, stdout, stderr := runCLI(t, configMap, "apply", "-f", "-", "--policies", td+"policies.yaml", "--explain")
	if code != 0 || !strings.Contains(stdout, "name: settings") || strings.Contains(stdout, "team") {
		t.Fatalf("exit %d, want 0 and the object unchanged: %s%s", code, stdout, stderr)
	}
	if code != 0 {
		t.Fatalf("exit %d, want 0 (admitted): %s", code, stderr)
	}
	for _, want := range []string{
		`Warning: policy "team-label" binding "team-label" mutation 0: error ignored by failurePolicy Ignore: expression 'Object{metadata: Object.metadata{labels: {"team": object.metadata.annotations["team"]}}}' resulted in error: no such key: annotations`,
		"explain:   mutation 0: runtime cost ",
		": error: expression '",
		"explain: pass 1: ignored (failurePolicy Ignore): policy 'team-label' with binding 'team-label' denied request: expression",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

// TestApplyColor: -o diff is colored with --color=always (or a bare
// --color), never with --color=never, and not when NO_COLOR is set and
// stdout is no terminal.
func TestApplyColor(t *testing.T) {
	const td = "testdata/apply/"
	for _, tc := range []struct {
		flags []string
		color bool
	}{{[]string{"--color=always"}, true}, {[]string{"--color"}, true}, {[]string{"--color=never"}, false}, {nil, false}} {
		args := append([]string{"apply", "-f", td + "pod-with-debug.yaml", "--policies", td + "strip-debug.yaml", "-o", "diff"}, tc.flags...)
		t.Setenv("NO_COLOR", "1")
		code, stdout, stderr := runCLI(t, "", args...)
		if code != 0 || !strings.Contains(stdout, "debug-1") {
			t.Fatalf("%v: exit %d: %s%s", tc.flags, code, stdout, stderr)
		}
		if got := strings.Contains(stdout, "\x1b[31m"); got != tc.color {
			t.Errorf("%v: colored %v, want %v:\n%s", tc.flags, got, tc.color, stdout)
		}
	}
}

// TestApplyAdmissionPlugins: apply runs kube-apiserver's default admission
// plugins before the policies, fed from --resources, as its flags choose
// them; --explain shows the stage; a plugin's refusal is kube-apiserver's
// 403.
func TestApplyAdmissionPlugins(t *testing.T) {
	const td = "testdata/apply/"
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pvc := write("pvc.yaml", "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data, namespace: shop}\nspec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}\n")
	sc := write("sc.yaml", "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: fast, annotations: {storageclass.kubernetes.io/is-default-class: \"true\"}}\nprovisioner: example.com/fast\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n")
	ghost := write("ghost.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: shop}\nspec: {serviceAccountName: ghost, containers: [{name: app, image: nginx}]}\n")
	for _, c := range []struct {
		name             string
		args             []string
		code             int
		stdout, nostdout []string
		stderr           []string
	}{
		{name: "a pod gets its service account, token volume, priority and tolerations",
			args:   []string{"-f", td + "pod.yaml", "--explain"},
			stdout: []string{"serviceAccountName: default", "name: kube-api-access-xxxxx", "mountPath: /var/run/secrets/kubernetes.io/serviceaccount", "priority: 0", "key: node.kubernetes.io/not-ready"},
			stderr: []string{"explain: admission plugins before the policies: NamespaceLifecycle, LimitRanger, ServiceAccount, TaintNodesByCondition, Priority, DefaultTolerationSeconds, DefaultStorageClass, StorageObjectInUseProtection, PodGroupProtection, RuntimeClass, DefaultIngressClass, PodTopologyLabels\n",
				"explain: admission plugin ServiceAccount: changed the object\n", "explain: admission plugin Priority: changed the object\n"}},
		{name: "without ServiceAccount and Priority",
			args:     []string{"-f", td + "pod.yaml", "--disable-admission-plugins", "ServiceAccount,Priority", "--explain"},
			stdout:   []string{"key: node.kubernetes.io/not-ready"},
			nostdout: []string{"serviceAccountName", "kube-api-access", "priority:"},
			stderr:   []string{"explain: admission plugins before the policies: NamespaceLifecycle, LimitRanger, TaintNodesByCondition, DefaultTolerationSeconds,"}},
		{name: "only the plugins named",
			args:     []string{"-f", td + "pod.yaml", "--admission-plugins", "Priority,PodSecurity", "--explain"},
			stdout:   []string{"priority: 0"},
			nostdout: []string{"serviceAccountName", "not-ready"},
			stderr:   []string{"explain: admission plugins before the policies: Priority\n"}},
		{name: "a PVC gets the default StorageClass of --resources",
			args:   []string{"-f", pvc, "--resources", sc},
			stdout: []string{"storageClassName: fast", "- kubernetes.io/pvc-protection"}},
		{name: "a pod of a missing service account is refused",
			args:   []string{"-f", ghost, "--explain"},
			code:   1,
			stderr: []string{"explain: admission plugin ServiceAccount: refused: pods \"web\" is forbidden: error looking up service account shop/ghost: serviceaccount \"ghost\" not found\n", "\npods \"web\" is forbidden: error looking up service account shop/ghost: serviceaccount \"ghost\" not found\n"}},
		{name: "an unknown plugin",
			args:   []string{"-f", td + "pod.yaml", "--enable-admission-plugins", "AlwaysPullImage"},
			code:   2,
			stderr: []string{`enable-admission-plugins plugin "AlwaysPullImage" is unknown`}},
		{name: "exclusive flags",
			args:   []string{"-f", td + "pod.yaml", "--admission-plugins", "Priority", "--disable-admission-plugins", "ServiceAccount"},
			code:   2,
			stderr: []string{"admission-plugins and enable-admission-plugins/disable-admission-plugins flags are mutually exclusive"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, "", append([]string{"apply", "--policies", td + "strip-debug.yaml"}, c.args...)...)
			if code != c.code {
				t.Fatalf("exit %d, want %d: %s", code, c.code, stderr)
			}
			for _, w := range c.stdout {
				if !strings.Contains(stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout)
				}
			}
			for _, w := range c.nostdout {
				if strings.Contains(stdout, w) {
					t.Errorf("stdout has %q:\n%s", w, stdout)
				}
			}
			for _, w := range c.stderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
}

// TestApplyOrderAndPrecedence: apply validates the policies and runs lint's
// checks beside the object's decoding, yet prints and fails as if one
// followed the other: lint's findings come before what the decoding prints
// (the namespace notice), and an invalid policy is the error reported
// whatever else is wrong (a missing resources file, an object kube-apiserver
// refuses to decode, a bad --operation), with nothing of the decoding printed.
func TestApplyOrderAndPrecedence(t *testing.T) {
	const td = "testdata/apply/"
	const corpus = "../../lint/testdata/corpus/k8s-docs-applyconfiguration.yaml"
	t.Run("lint findings before the decoding's notice", func(t *testing.T) {
		for i := 0; i < 5; i++ { // the two run concurrently: repeat
			_, _, stderr := runCLI(t, "", "apply", "-f", td+"pod-with-debug.yaml", "--policies", corpus)
			lintAt, noticeAt := strings.Index(stderr, "warning: lint "), strings.Index(stderr, "notice: namespace ")
			if lintAt < 0 || noticeAt < 0 || lintAt > noticeAt {
				t.Fatalf("want lint's findings, then the notice:\n%s", stderr)
			}
		}
	})
	const invalid = `<input>:1:27: undeclared reference to 'Object.spec.initContainers'`
	for _, c := range []struct {
		name   string
		args   []string
		reject []string
	}{
		{"a resources file that does not exist", []string{"-f", td + "pod.yaml", "--resources", td + "missing.yaml"}, []string{"missing.yaml"}},
		{"an object kube-apiserver refuses to decode", []string{"-f", td + "pod-priority-overflow.yaml"}, []string{"priority", "notice:"}},
		{"a bad --operation", []string{"-f", td + "pod.yaml", "--operation", "PATCH"}, []string{"--operation", "notice:"}},
		{"several objects", []string{"-f", td + "pod.yaml", "-f", td + "configmap.yaml"}, []string{"notice:"}},
	} {
		t.Run("an invalid policy before "+c.name, func(t *testing.T) {
			args := append([]string{"apply", "--policies", td + "invalid-variable.yaml"}, c.args...)
			code, stdout, stderr := runCLI(t, "", args...)
			checkCLI(t, code, stdout, stderr, exitUsage, []string{invalid}, c.reject)
		})
	}
	t.Run("an invalid policy before resources on standard input, left unread", func(t *testing.T) {
		var out, errOut bytes.Buffer
		code := run(context.Background(), []string{"apply", "--policies", td + "invalid-variable.yaml", "-f", td + "pod.yaml", "--resources", "-"}, unreadable{t}, &out, &errOut)
		checkCLI(t, code, out.String(), errOut.String(), exitUsage, []string{invalid}, nil)
	})
	t.Run("lint findings before a bad --operation", func(t *testing.T) {
		code, stdout, stderr := runCLI(t, "", "apply", "-f", td+"pod.yaml", "--policies", corpus, "--operation", "PATCH")
		checkCLI(t, code, stdout, stderr, exitUsage, []string{"warning: lint ", "--operation must be CREATE, UPDATE, DELETE or CONNECT"}, []string{"notice:"})
		if strings.Index(stderr, "warning: lint ") > strings.Index(stderr, "--operation") {
			t.Errorf("want lint's findings before the error:\n%s", stderr)
		}
	})
}

// TestApplyDelete: a DELETE carries the object of --old-object, else of
// -f, as its old object and no object; MutatingAdmissionPolicies do not
// run on it (their rules cannot name DELETE), and nothing is printed when
// it is admitted.
func TestApplyDelete(t *testing.T) {
	const td = "testdata/apply/"
	for _, args := range [][]string{
		{"-f", td + "pod.yaml"},
		{"-f", td + "pod.yaml", "--old-object", td + "pod.yaml"},
		{"-f", td + "pod.yaml", "-f", td + "configmap.yaml"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, stdout, stderr := runCLI(t, "", append([]string{"apply", "--policies", "../../examples/sidecar-injection", "--operation", "delete", "--explain"}, args...)...)
			if code != exitOK || strings.TrimSpace(stdout) != "" {
				t.Fatalf("exit %d, stdout %q, stderr:\n%s", code, stdout, stderr)
			}
		})
	}
}

// unreadable is a standard input that must not be read.
type unreadable struct{ t *testing.T }

func (u unreadable) Read([]byte) (int, error) {
	u.t.Error("standard input was read")
	return 0, io.EOF
}
