package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func runCLI(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func TestLint(t *testing.T) {
	cases := []struct {
		name     string
		args     []string
		stdin    string
		wantCode int
		want     []string
	}{
		{
			name:     "a broken policy is reported with file, field path and caret",
			args:     []string{"lint", "testdata/lint/bad.yaml"},
			wantCode: exitProblem,
			want: []string{
				`testdata/lint/bad.yaml#0: MutatingAdmissionPolicy "broken": spec.reinvocationPolicy: Required value`,
				`Unsupported value: "DELETE"`,
				`testdata/lint/bad.yaml#0: MutatingAdmissionPolicy "broken": spec.mutations[0].applyConfiguration.expression: Invalid value: "Object{metadata: Object.metadata{labels: {\"a\": }}}": compilation failed: ERROR: <input>:1:`,
				" | Object{metadata: Object.metadata{labels: {\"a\": }}}\n | ",
				`spec.mutations[1].jsonPatch.expression: Invalid value: "\"not a patch\"": must evaluate to list(JSONPatch) but got string`,
			},
		},
		{
			name:     "valid examples pass and show their cost",
			args:     []string{"lint", "../../examples"},
			wantCode: exitOK,
			want:     []string{"inject-logging-sidecar", "0 problems"},
		},
		{
			name:     "a CRD with maxItems bounds the estimate",
			args:     []string{"lint", "testdata/lint/crd.yaml"},
			wantCode: exitOK,
			want:     []string{"widget-tags", "yes", "0 problems"},
		},
		{
			name:     "stdin is read with -",
			args:     []string{"lint", "-"},
			stdin:    "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingAdmissionPolicyBinding\nmetadata:\n  name: b\nspec:\n  policyName: p\n",
			wantCode: exitOK,
			want:     []string{"0 policies, 1 bindings, 0 problems"},
		},
		{
			name:     "a missing file is bad input",
			args:     []string{"lint", "testdata/lint/nope.yaml"},
			wantCode: exitProblem,
			want:     []string{"nope.yaml"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, tc.stdin, tc.args...)
			all := out + errOut
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d\n%s", code, tc.wantCode, all)
			}
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("output lacks %q:\n%s", w, all)
				}
			}
		})
	}
}
