package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestApplyPodSecurity: kube-apiserver's validating plugins after the
// mutating chain: a sidecar a policy injects into a Pod of a restricted
// namespace is refused with PodSecurity's message (exit 1), the same Pod
// is admitted once a second policy hardens the sidecar; PodSecurity's
// defaults and exemptions come from --admission-control-config-file.
// Golden files (go test -run TestApplyPodSecurity -update rewrites them).
func TestApplyPodSecurity(t *testing.T) {
	const td = "testdata/apply/podsecurity/"
	for _, c := range []struct {
		name string
		args []string
		code int
	}{
		{name: "sidecar-refused", code: 1,
			args: []string{"--policies", td + "sidecar.yaml", "--resources", td + "namespaces.yaml"}},
		{name: "sidecar-hardened-admitted",
			args: []string{"--policies", td + "sidecar.yaml," + td + "harden.yaml", "--resources", td + "namespaces.yaml"}},
		{name: "config-defaults-refused", code: 1,
			args: []string{"--policies", td + "sidecar.yaml", "--admission-control-config-file", td + "admission.yaml"}},
		{name: "config-exempt-user-admitted",
			args: []string{"--policies", td + "sidecar.yaml", "--admission-control-config-file", td + "admission.yaml", "--user", "ci-bot", "-o", "patch"}},
		{name: "config-invalid", code: 2,
			args: []string{"--policies", td + "sidecar.yaml", "--admission-control-config-file", td + "bad-admission.yaml"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, "", append([]string{"apply", "-f", td + "pod.yaml"}, c.args...)...)
			if code != c.code {
				t.Fatalf("exit %d, want %d: %s", code, c.code, stderr)
			}
			checkGolden(t, "testdata/apply/golden/podsecurity-"+c.name+".golden", fmt.Sprintf("exit %d\n--- stdout\n%s--- stderr\n%s", code, stdout, strings.ReplaceAll(stderr, td, "TESTDATA/")))
		})
	}
}
