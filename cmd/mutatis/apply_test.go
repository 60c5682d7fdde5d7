package main

import (
	"encoding/json"
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
