package main

import (
	"encoding/json"
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
