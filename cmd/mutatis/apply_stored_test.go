package main

import (
	"fmt"
	"testing"
)

// TestApplyPrintsStoredObject: apply prints the object kube-apiserver
// would store, not the admitted one: the registry strategy derives fields
// from the admitted object (a Pod's status.qosClass, Burstable once a
// policy adds a container with limits; its generation and phase), and a
// custom resource comes back pruned of the fields a JSON patch added
// outside its schema (a preserve-unknown subtree keeps its own). -o patch
// stays admission's patch (go test -run TestApplyPrintsStoredObject
// -update rewrites the golden files).
func TestApplyPrintsStoredObject(t *testing.T) {
	const td = "testdata/apply/stored/"
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"pod-qos-class", []string{"-f", td + "pod.yaml", "--policies", td + "sidecar-with-limits.yaml"}},
		{"pod-qos-class-patch", []string{"-f", td + "pod.yaml", "--policies", td + "sidecar-with-limits.yaml", "-o", "patch"}},
		{"custom-resource-pruned", []string{"-f", td + "gadget.yaml", "--policies", td + "gadget-extra.yaml", "--resources", td + "crd.yaml"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, "", append([]string{"apply"}, tc.args...)...)
			if code != 0 {
				t.Errorf("exit %d, want 0\n%s", code, stderr)
			}
			checkGolden(t, td+"golden/"+tc.name+".golden", fmt.Sprintf("exit %d\n--- stdout\n%s--- stderr\n%s", code, stdout, stderr))
		})
	}
}
