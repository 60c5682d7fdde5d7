package compiler

import (
	"fmt"
	"runtime"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

// manyVariables is a policy with n variables, each one adding one to the
// one before it (so every variable compiles against the variables before
// it), and a mutation using the last one.
func manyVariables(n int) *admissionregistrationv1.MutatingAdmissionPolicy {
	s := policySpec{variables: make([][2]string, n)}
	s.variables[0] = [2]string{"v0", "0"}
	for i := 1; i < n; i++ {
		s.variables[i] = [2]string{fmt.Sprintf("v%d", i), fmt.Sprintf("variables.v%d + 1", i-1)}
	}
	s.ac = []string{fmt.Sprintf(`Object{spec: Object.spec{replicas: variables.v%d}}`, n-1)}
	return s.build()
}

// undefinedField is kube-apiserver's compile error for variables.<name>
// when no variable <name> is visible: the same text for a variable declared
// later, the variable itself and one never declared.
func undefinedField(name string) string {
	src := "variables." + name
	return "compilation failed: ERROR: <input>:1:10: undefined field '" + name + "'\n | " + src + "\n | .........^"
}

// TestVariablesSeeOnlyEarlierVariables checks the prefix rule on both sides
// of sharedVariableEnvs (variables compiled in shared environments and in
// the policy's own growing one), against upstream's composited compiler
// and against its exact texts.
func TestVariablesSeeOnlyEarlierVariables(t *testing.T) {
	var vars [][2]string
	want := map[int]string{} // variable index → exact error
	lastPad := fmt.Sprintf("pad%d", sharedVariableEnvs+2)
	for _, start := range []int{0, sharedVariableEnvs + 3} {
		for len(vars) < start {
			vars = append(vars, [2]string{fmt.Sprintf("pad%d", len(vars)), `"x"`})
		}
		i := len(vars)
		later, self, never := fmt.Sprintf("later%d", i), fmt.Sprintf("self%d", i), fmt.Sprintf("never%d", i)
		vars = append(vars,
			[2]string{"r" + later, "variables." + later},
			[2]string{self, "variables." + self},
			[2]string{"r" + never, "variables." + never},
			[2]string{later, "1"},
			[2]string{fmt.Sprintf("ok%d", i), fmt.Sprintf("variables.%s + variables.%s.size()", later, lastPad)},
		)
		want[i], want[i+1], want[i+2] = undefinedField(later), undefinedField(self), undefinedField(never)
		if start == 0 {
			// The padding is declared after the first group.
			want[i+4] = undefinedField(lastPad)
			vars[i+4][1] = "variables." + lastPad
		}
	}
	spec := policySpec{variables: vars,
		conditions: [][2]string{{"c", "variables.never == 1"}, {"d", `has(variables.later0) && variables.ok0 == variables.ok` + fmt.Sprint(sharedVariableEnvs+3)}},
		ac:         []string{`Object{spec: Object.spec{replicas: variables.later` + fmt.Sprint(sharedVariableEnvs+3) + `}}`}}
	conditionErr := "compilation failed: ERROR: <input>:1:10: undefined field 'never'\n | variables.never == 1\n | .........^"

	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	// Twice: the second time the environments of the full variable list
	// come from the cache, and must still not leak later variables.
	for round := range 2 {
		p := spec.build()
		p.Name = fmt.Sprintf("round%d", round)
		compiled, err := c.Compile(p)
		if err != nil {
			t.Fatal(err)
		}
		upstream := upstreamErrors(t, p)
		got := compiled.Expressions()
		if len(got) != len(upstream) {
			t.Fatalf("%d expressions, upstream %d", len(got), len(upstream))
		}
		for i, e := range got {
			g := ""
			if e.Err != nil {
				g = e.Err.Error()
			}
			if g != upstream[i] {
				t.Errorf("round %d, expression %d (%s):\n ours:     %q\n upstream: %q", round, i, e.Source, g, upstream[i])
			}
			w := want[i]
			if i == len(vars) {
				w = conditionErr
			}
			if g != w {
				t.Errorf("round %d, expression %d (%s): error %q, want %q", round, i, e.Source, g, w)
			}
		}
	}
}

// TestCompileTenThousandVariables compiles a policy of 10,000 variables
// (API validation bounds neither their number nor their length; only the
// request size does, 3 MiB) and checks the result.
func TestCompileTenThousandVariables(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles 10,000 expressions")
	}
	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	compiled, err := c.Compile(manyVariables(10000))
	if err != nil {
		t.Fatal(err)
	}
	if errs := compiled.Errors(); len(errs) > 0 {
		t.Fatalf("%d errors, the first: %v", len(errs), errs[0])
	}
	if last := compiled.Variables[9999]; last.OutputType == nil || last.OutputType.String() != "int" {
		t.Fatalf("the last variable has type %v, want int", last.OutputType)
	}
}

// TestCompileMemoryIsLinearInVariables compares the bytes allocated to
// compile 1,000 and 4,000 variables: four times as many variables may cost
// at most six times as much (it was sixteen when every variable had an
// environment of its own).
func TestCompileMemoryIsLinearInVariables(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles 5,000 expressions")
	}
	allocated := func(n int) uint64 {
		a, _ := measureCompile(t, n)
		return a
	}
	small, large := allocated(1000), allocated(4000)
	t.Logf("1,000 variables: %d bytes, 4,000: %d bytes (%.2fx)", small, large, float64(large)/float64(small))
	if large > 6*small {
		t.Errorf("4,000 variables allocate %d bytes, %.1f times 1,000 variables' %d: not linear", large, float64(large)/float64(small), small)
	}
}

// BenchmarkCompileVariables compiles a policy of 100, 1,000, 2,000 and
// 10,000 variables with a new Compiler (an empty environment cache) each
// time.
func BenchmarkCompileVariables(b *testing.B) {
	if _, err := New(); err != nil { // the base environments, once per process
		b.Fatal(err)
	}
	for _, n := range []int{100, 1000, 2000, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			p := manyVariables(n)
			b.ReportAllocs()
			for b.Loop() {
				c, err := New()
				if err != nil {
					b.Fatal(err)
				}
				compiled, err := c.Compile(p)
				if err != nil {
					b.Fatal(err)
				}
				if errs := compiled.Errors(); len(errs) > 0 {
					b.Fatal(errs)
				}
			}
		})
	}
}

// measureCompile compiles manyVariables(n) with a new Compiler and returns
// the bytes allocated while compiling and the heap the compiled policy keeps.
func measureCompile(t *testing.T, n int) (allocated uint64, kept int64) {
	t.Helper()
	p := manyVariables(n)
	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	var before, after, afterGC runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	compiled, err := c.Compile(p)
	runtime.ReadMemStats(&after)
	if err != nil || len(compiled.Errors()) > 0 {
		t.Fatal(err, compiled.Errors())
	}
	runtime.GC()
	runtime.ReadMemStats(&afterGC)
	runtime.KeepAlive(compiled)
	return after.TotalAlloc - before.TotalAlloc, int64(afterGC.HeapAlloc) - int64(before.HeapAlloc)
}

// TestCompileTenThousandVariablesMemory bounds the memory of compiling
// 10,000 variables: the bytes allocated while compiling (TotalAlloc; 514 MB
// when every expression built its cel-go program at compile time) and the
// heap the compiled policy keeps. Bytes, not time: they do not depend on the
// machine's load.
func TestCompileTenThousandVariablesMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles 10,000 expressions")
	}
	allocated, live := measureCompile(t, 10000)
	t.Logf("10,000 variables: %.1f MB allocated, %.1f MB kept", float64(allocated)/1e6, float64(live)/1e6)
	const maxAllocated, maxKept = 250e6, 100e6
	if allocated > maxAllocated {
		t.Errorf("compiling 10,000 variables allocated %.1f MB, more than %.0f MB", float64(allocated)/1e6, maxAllocated/1e6)
	}
	if live > maxKept {
		t.Errorf("the compiled policy of 10,000 variables keeps %.1f MB, more than %.0f MB", float64(live)/1e6, maxKept/1e6)
	}
}
