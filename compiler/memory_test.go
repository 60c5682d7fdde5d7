package compiler

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	celtypes "github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
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
		{"a bound of 1 MiB", 1 << 20, `composited variable "v20" fails to evaluate: operation cancelled: the strings and bytes the evaluation built hold 2097150 bytes, more than the bound of 1048576 bytes per evaluation (mutatis serve --max-variable-bytes)`},
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

// chainedMaps is an expression doubling a string n times without a
// variable: each map() of a one-string list returns the string doubled,
// by double (s + s, charged by its bytes) or by replace (charged by its
// receiver, the probe of docs/reliability.md R3-3).
func chainedMaps(n int, double string) string {
	e := `["x"]`
	for range n {
		e = fmt.Sprintf(`%s.map(s, %s)`, e, double)
	}
	return e
}

// TestBuiltBytesBound: with a bound in the context, an evaluation whose
// calls build strings past it stops, naming the bound, even when no
// variable holds them; below the bound the result and the runtime cost
// are those without a bound (kube-apiserver's).
func TestBuiltBytesBound(t *testing.T) {
	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	const past1MiB = `operation cancelled: the strings and bytes the evaluation built hold 2097150 bytes, more than the bound of 1048576 bytes per evaluation (mutatis serve --max-variable-bytes)`
	in := Input{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c"}}}
	for _, pc := range []struct {
		name string
		spec policySpec
	}{
		{"chained map doubling by +", policySpec{ac: []string{fmt.Sprintf(`Object{metadata: Object.metadata{annotations: {"size": string(size(%s[0]))}}}`, chainedMaps(20, "s + s"))}}},
		{"chained map doubling by replace", policySpec{ac: []string{fmt.Sprintf(`Object{metadata: Object.metadata{annotations: {"size": string(size(%s[0]))}}}`, chainedMaps(23, `"xx".replace("x", s)`))}}},
		{"variables doubling by replace", doublingVariables(21)},
	} {
		p, err := c.Compile(pc.spec.build())
		if err != nil || len(p.Errors()) > 0 {
			t.Fatal(err, p.Errors())
		}
		unbounded, _, err := p.NewActivation(context.Background(), in).Eval(p.Mutations[0], MutationBudget)
		if err != nil || unbounded.Err != nil {
			t.Fatal(pc.name, err, unbounded.Err)
		}
		for _, tc := range []struct {
			name    string
			limit   int64
			wantErr string
		}{
			{"a bound of 1 MiB", 1 << 20, past1MiB},
			{"a bound above what the expression builds", 32 << 20, ""},
		} {
			t.Run(pc.name+"/"+tc.name, func(t *testing.T) {
				// Twice: the second evaluation reuses the counting program.
				for range 2 {
					ctx := WithVariableBytesLimit(context.Background(), tc.limit)
					res, _, err := p.NewActivation(ctx, in).Eval(p.Mutations[0], MutationBudget)
					if err != nil {
						t.Fatal(err)
					}
					if tc.wantErr == "" {
						if res.Err != nil || res.Cost != unbounded.Cost || res.Value.Equal(unbounded.Value) != celtypes.True {
							t.Fatalf("got %v (cost %d, error %v), want %v (cost %d)", res.Value, res.Cost, res.Err, unbounded.Value, unbounded.Cost)
						}
						continue
					}
					if res.Err == nil || !strings.Contains(res.Err.Error(), tc.wantErr) {
						t.Fatalf("error %v, want it to contain %q", res.Err, tc.wantErr)
					}
				}
			})
		}
	}
}

// TestBuiltBytesBoundConcurrent: evaluations at once, some past their
// bound and some under it, each count only what they build (the counting
// programs are not shared while in use; run with -race).
func TestBuiltBytesBoundConcurrent(t *testing.T) {
	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Compile(policySpec{ac: []string{fmt.Sprintf(`Object{metadata: Object.metadata{annotations: {"size": string(size(%s[0]))}}}`, chainedMaps(18, "s + s"))}}.build())
	if err != nil || len(p.Errors()) > 0 {
		t.Fatal(err, p.Errors())
	}
	in := Input{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c"}}}
	errs := make(chan error, 16)
	for i := range 16 {
		go func() {
			// 2^19-2 bytes are built: under 1 MiB, past 256 KiB.
			limit, wantErr := int64(1<<20), false
			if i%2 == 1 {
				limit, wantErr = 256<<10, true
			}
			res, _, err := p.NewActivation(WithVariableBytesLimit(context.Background(), limit), in).Eval(p.Mutations[0], MutationBudget)
			switch {
			case err != nil:
				errs <- err
			case (res.Err != nil) != wantErr:
				errs <- fmt.Errorf("bound %d: error %v, want one: %v", limit, res.Err, wantErr)
			default:
				errs <- nil
			}
		}()
	}
	for range 16 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestValueBytesFast holds valueBytes (which reads the Go values under
// cel-go's views of them) to valueBytesReference (which walks the views)
// on random JSON-shaped values deeper than maxSizedDepth, with the other
// Go types a view can hold, presented by the default adapter and by a
// registry's, alone and inside lists and maps CEL builds.
func TestValueBytesFast(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	var gen func(depth int) any
	gen = func(depth int) any {
		k := rng.Intn(12)
		if depth > 11 {
			k = rng.Intn(6)
		}
		switch k {
		case 0:
			return strings.Repeat("x", rng.Intn(5))
		case 1:
			return int64(rng.Intn(100))
		case 2:
			return rng.Float64()
		case 3:
			return rng.Intn(2) == 0
		case 4:
			return nil
		case 5:
			return []byte("bytes"[:rng.Intn(6)])
		case 6:
			return map[string]string{"ab": "cde", strings.Repeat("k", rng.Intn(3)): "v"}
		case 7:
			return []string{"one", "three"}
		case 8, 9:
			m := map[string]any{}
			for i := range rng.Intn(4) {
				m[fmt.Sprintf("key%d", i)+strings.Repeat("y", rng.Intn(3))] = gen(depth + 1)
			}
			return m
		default:
			l := make([]any, rng.Intn(4))
			for i := range l {
				l[i] = gen(depth + 1)
			}
			return l
		}
	}
	registry, err := celtypes.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	adapters := []celtypes.Adapter{celtypes.DefaultTypeAdapter, registry}
	var counted int64
	for i := range 3000 {
		native := gen(0)
		a := adapters[i%2]
		v := a.NativeToValue(native)
		built := celtypes.NewRefValList(a, []ref.Val{v, celtypes.String("zz"), a.NativeToValue(gen(0))})
		mapped := celtypes.NewRefValMap(a, map[ref.Val]ref.Val{celtypes.String("k"): v, celtypes.Int(1): built})
		// The object's maps and lists as expressions see them (mapView,
		// listView), alone and in a list of CEL values (a filter's result).
		view := presentEntry(native)
		views := celtypes.NewRefValList(a, []ref.Val{view, presentEntry(gen(0)), celtypes.String("zz")})
		for _, val := range []ref.Val{v, built, mapped, view, views} {
			for _, depth := range []int{0, 3, maxSizedDepth - 1, maxSizedDepth} {
				got, want := valueBytes(val, depth), valueBytesReference(val, depth)
				if got != want {
					t.Fatalf("value %d at depth %d: %d bytes, the reference %d\n%#v", i, depth, got, want, native)
				}
				counted += want
			}
		}
	}
	if counted == 0 {
		t.Fatal("no bytes counted")
	}
}
