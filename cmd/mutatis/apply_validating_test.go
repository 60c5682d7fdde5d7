package main

import (
	"fmt"
	"testing"
)

// TestApplyValidatingAdmissionPolicies: the ValidatingAdmissionPolicies of
// --policies judge what the mutating chain and the registry made of the
// object. A sidecar without limits is refused by a Deny VAP (exit 1 with
// kube-apiserver's message), warned about by a Warn VAP (exit 0, the
// object on stdout); ResourceQuota refuses the sidecar without limits and
// a Pod over what the quota's status leaves (exit 1, its 403); a VAP
// passed as the object to admit is bad input
// (go test -run TestApplyValidatingAdmissionPolicies -update rewrites the
// golden files).
func TestApplyValidatingAdmissionPolicies(t *testing.T) {
	const td = "testdata/apply/validating/"
	for _, tc := range []struct {
		name string
		args []string
		code int
	}{
		{"deny", []string{"-f", td + "pod.yaml", "--policies", td + "inject-sidecar.yaml", "--policies", td + "require-limits.yaml"}, exitProblem},
		{"warn", []string{"-f", td + "pod.yaml", "--policies", td + "inject-sidecar.yaml", "--policies", td + "warn-limits.yaml"}, 0},
		{"admitted-without-the-sidecar", []string{"-f", td + "pod.yaml", "--policies", td + "require-limits.yaml", "-o", "patch"}, 0},
		// ResourceQuota, after the webhooks, against the quota's status:
		// the injected sidecar has no memory limit; the Pod's CPU
		// request is more than the status leaves.
		{"quota-sidecar-without-limits", []string{"-f", td + "pod.yaml", "--policies", td + "inject-sidecar.yaml", "--resources", td + "quota-limits.yaml"}, exitProblem},
		{"quota-exceeded", []string{"-f", td + "pod.yaml", "--policies", td + "require-limits.yaml", "--resources", td + "quota-cpu.yaml"}, exitProblem},
		{"vap-as-object", []string{"-f", td + "require-limits.yaml", "--policies", td + "inject-sidecar.yaml"}, exitUsage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, "", append([]string{"apply"}, tc.args...)...)
			if code != tc.code {
				t.Errorf("exit %d, want %d\n%s", code, tc.code, stderr)
			}
			checkGolden(t, td+"golden/"+tc.name+".golden", fmt.Sprintf("exit %d\n--- stdout\n%s--- stderr\n%s", code, stdout, stderr))
		})
	}
}
