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
