package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/matching"
	"github.com/mutatis-dev/mutatis/test/upstream"
)

// compilePolicies are 1,000 policies of the shapes of examples/: a variable,
// a matchCondition and an ApplyConfiguration or JSONPatch mutation each.
func compilePolicies(n int) []*admissionregistrationv1.MutatingAdmissionPolicy {
	out := make([]*admissionregistrationv1.MutatingAdmissionPolicy, n)
	for i := range out {
		m := ac(fmt.Sprintf(`Object{metadata: Object.metadata{labels: {"policy-%04d": variables.team}}}`, i))
		if i%2 == 1 {
			m = jp(fmt.Sprintf(`object.spec.containers.map(c, JSONPatch{op: "replace", path: "/spec/containers/" + string(object.spec.containers.indexOf(c)) + "/image", value: "mirror-%d.example.com/" + c.image})`, i))
		}
		p, _ := policy(fmt.Sprintf("policy-%04d", i), "", "pods", m)
		p.Spec.Variables = []admissionregistrationv1.Variable{{Name: "team", Expression: `has(object.metadata.labels) && "team" in object.metadata.labels ? object.metadata.labels["team"] : "none"`}}
		p.Spec.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "not-system", Expression: fmt.Sprintf(`!request.userInfo.username.startsWith("system:") && request.namespace != "ns-%d"`, i)}}
		out[i] = p
	}
	return out
}

// BenchmarkCompile compiles 1,000 policies from scratch per iteration: a
// new mutatis Compiler (its process-wide base environments are built once,
// as in a server) against upstream's per-policy compilePolicy. The
// live-heap-MB metric is the heap still in use after a GC once the 1,000
// compiled policies are held.
func BenchmarkCompile(b *testing.B) {
	policies := compilePolicies(1000)
	b.Run("impl=upstream/case=compile-1000", func(b *testing.B) {
		b.ReportAllocs()
		var held []any
		for b.Loop() {
			held = held[:0]
			for _, p := range policies {
				held = append(held, upstream.Compile(p))
			}
		}
		b.ReportMetric(liveHeapMB(), "live-heap-MB")
		runtime.KeepAlive(held)
	})
	b.Run("impl=mutatis/case=compile-1000", func(b *testing.B) {
		b.ReportAllocs()
		var held []*compiler.Policy
		for b.Loop() {
			c, err := compiler.New()
			if err != nil {
				b.Fatal(err)
			}
			held = held[:0]
			for _, p := range policies {
				cp, err := c.Compile(p)
				if err != nil {
					b.Fatal(err)
				}
				held = append(held, cp)
			}
		}
		b.ReportMetric(liveHeapMB(), "live-heap-MB")
		runtime.KeepAlive(held)
	})
}

func liveHeapMB() float64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.HeapAlloc) / (1 << 20)
}

// compileChildEnv makes TestCompileChild do its work: compile 1,000
// policies in a fresh process and print the wall time and peak resident
// set (VmHWM), which a benchmark cannot measure in its own, warm process.
const compileChildEnv = "MUTATIS_BENCH_COMPILE_CHILD"

func TestCompileChild(t *testing.T) {
	impl := os.Getenv(compileChildEnv)
	if impl == "" {
		t.Skip("run by BenchmarkCompileProcess")
	}
	policies := compilePolicies(1000)
	start := time.Now()
	var held []any
	switch impl {
	case "mutatis":
		c, err := compiler.New()
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range policies {
			cp, err := c.Compile(p)
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, cp)
		}
	case "upstream":
		for _, p := range policies {
			held = append(held, upstream.Compile(p))
		}
	}
	elapsed := time.Since(start)
	runtime.KeepAlive(held)
	fmt.Printf("compile-result elapsed-ms=%d vmhwm-kb=%d\n", elapsed.Milliseconds(), vmHWM(t))
}

// vmHWM reads the peak resident set size of this process, in KiB.
func vmHWM(t *testing.T) int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb
		}
	}
	t.Fatal("no VmHWM in /proc/self/status")
	return 0
}

// BenchmarkCompileProcess runs TestCompileChild in a fresh process per
// iteration and reports its compile time (compile-ms, policies only, the
// process start excluded) and peak resident set (peak-RSS-MB, the whole
// test process: Go runtime, k8s libraries and the compiled policies).
func BenchmarkCompileProcess(b *testing.B) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		b.Skip("needs /proc")
	}
	for _, impl := range []string{"upstream", "mutatis"} {
		b.Run("impl="+impl+"/case=compile-1000", func(b *testing.B) {
			var ms, kb float64
			n := 0
			for b.Loop() {
				cmd := exec.Command(os.Args[0], "-test.run=^TestCompileChild$", "-test.count=1")
				cmd.Env = append(os.Environ(), compileChildEnv+"="+impl)
				out, err := cmd.CombinedOutput()
				if err != nil {
					b.Fatalf("%v\n%s", err, out)
				}
				var e, h int64
				i := bytes.Index(out, []byte("compile-result"))
				if i < 0 {
					b.Fatalf("no result in\n%s", out)
				}
				if _, err := fmt.Sscanf(string(out[i:]), "compile-result elapsed-ms=%d vmhwm-kb=%d", &e, &h); err != nil {
					b.Fatalf("%v in\n%s", err, out)
				}
				ms += float64(e)
				kb += float64(h)
				n++
			}
			b.ReportMetric(ms/float64(n), "compile-ms")
			b.ReportMetric(kb/float64(n)/1024, "peak-RSS-MB")
		})
	}
}

// TestNonMatchingRequestDoesNotAllocate asserts that finding the policies
// of a request no policy names allocates nothing, whatever the number of
// policies: the evaluator's index lookup (matching.Index, filled as
// engine.NewEvaluator fills it) for a Pod CREATE among policies on other
// resources.
func TestNonMatchingRequestDoesNotAllocate(t *testing.T) {
	for _, n := range []int{10, 1000} {
		t.Run(fmt.Sprintf("%d policies", n), func(t *testing.T) {
			s := manyPolicies("alloc", n, false)
			ix := matching.NewIndex[int](matching.DefaultTable())
			for i, p := range s.policies {
				ix.Add(matching.SelectorForPolicy(p), i)
			}
			found := 0
			yield := func(int) bool { found++; return true }
			allocs := testing.AllocsPerRun(100, func() {
				ix.Lookup("CREATE", podGVR, yield)
			})
			if found != 0 {
				t.Fatalf("%d candidates for a request no policy names", found)
			}
			if allocs != 0 {
				t.Errorf("the lookup allocates %v times per request, want 0", allocs)
			}
		})
	}
}

// TestNonMatchingAdmitDoesNotAllocate asserts that a whole admission no
// policy can match allocates nothing: engine.Evaluator.Admit looks the
// candidates up before anything else and presents the request's object
// (already in its Go type's form, as the API server sends it) as it is.
func TestNonMatchingAdmitDoesNotAllocate(t *testing.T) {
	for _, n := range []int{10, 1000} {
		t.Run(fmt.Sprintf("%d policies", n), func(t *testing.T) {
			s := manyPolicies("alloc", n, false)
			w, stop := newWorld(t, worldObjects(), s.crds...)
			defer stop()
			ev, attrs := w.mutatisEvaluator(t, s.policies, s.bindings, s.req)
			ctx := context.Background()
			var res chain.Result
			var err error
			var r chain.Runner
			allocs := testing.AllocsPerRun(100, func() {
				res, err = r.Run(ctx, attrs, ev)
			})
			if err != nil || res.Denied != nil || res.Object == nil || len(res.Invocations) != 0 {
				t.Fatalf("admission: %v, %v, %d invocations, object %v", err, res.Denied, len(res.Invocations), res.Object != nil)
			}
			if allocs != 0 {
				t.Errorf("a non-matching admission allocates %v times, want 0", allocs)
			}
		})
	}
}
