package compiler

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// doublingVariables is a policy whose variables double a string through
// replace, which kube-apiserver charges by its receiver: variable i holds
// 2^i bytes, at a runtime cost of a few units each.
func doublingVariables(n int) policySpec {
	s := policySpec{variables: make([][2]string, n)}
	s.variables[0] = [2]string{"v0", `"x"`}
	for i := 1; i < n; i++ {
		s.variables[i] = [2]string{fmt.Sprintf("v%d", i), fmt.Sprintf(`"xx".replace("x", variables.v%d)`, i-1)}
	}
	s.ac = []string{fmt.Sprintf(`Object{metadata: Object.metadata{annotations: {"size": string(size(variables.v%d))}}}`, n-1)}
	return s
}

// TestVariableBytesBound: with a bound in the context, a variable whose
// value takes the variables' bytes past it fails to evaluate, naming the
// bound, and the evaluation holds no more than a few times the bound;
// without one, the policy evaluates as kube-apiserver evaluates it.
func TestVariableBytesBound(t *testing.T) {
	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Compile(doublingVariables(22).build())
	if err != nil || len(p.Errors()) > 0 {
		t.Fatal(err, p.Errors())
	}
	in := Input{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c"}}}
	for _, tc := range []struct {
		name    string
		limit   int64
		wantErr string
	}{
		{"no bound", 0, ""},
		{"a bound of 1 MiB", 1 << 20, `composited variable "v20" fails to evaluate: the values of the variables evaluated hold 2097151 bytes, more than the bound of 1048576 bytes per evaluation (mutatis serve --max-variable-bytes)`},
		{"a bound above what the policy holds", 8 << 20, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			if tc.limit != 0 {
				ctx = WithVariableBytesLimit(ctx, tc.limit)
			}
			res, _, err := p.NewActivation(ctx, in).Eval(p.Mutations[0], MutationBudget)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if res.Err != nil {
				got = res.Err.Error()
			}
			if tc.wantErr == "" {
				if got != "" || res.Value == nil {
					t.Fatalf("error %q, want the result", got)
				}
				return
			}
			if !strings.Contains(got, tc.wantErr) {
				t.Errorf("error %q, want it to contain %q", got, tc.wantErr)
			}
		})
	}
}
