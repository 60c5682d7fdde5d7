// Package harness measures what the CEL expressions of MutatingAdmissionPolicies
// cost when they run: per policy, per expression and per fixture object,
// the runtime cost kube-apiserver charges, the wall time and the
// allocations, next to the static estimate and the limits. Fixtures can be
// scaled (every list ×N) to show how cost and time grow with object size.
// `mutatis bench` is its command-line face.
package harness

import (
	"cmp"
	"context"
	"fmt"
	"runtime"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mutatis-dev/mutatis/cluster"
	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/engine"
)

// Fixture is one request to measure policies against.
type Fixture struct {
	// Name identifies the fixture in reports (e.g. the file it came from).
	Name string
	// Request is the admission request; its objects are scaled.
	Request cluster.Request
}

// Options tune a run.
type Options struct {
	// Scales are the factors every list of a fixture's objects is
	// multiplied by; nil means {1}.
	Scales []int
	// BenchTime is the minimum wall time spent evaluating each expression
	// (at least one evaluation is made); zero means 100ms.
	BenchTime time.Duration
	// Progress, when set, is called after each measured expression.
	Progress func(done, total int)
}

// Measurement is one expression of one invocation on one fixture at one
// scale.
type Measurement struct {
	Fixture string `json:"fixture"`
	Scale   int    `json:"scale"`
	// ObjectBytes is the size of the scaled object in JSON.
	ObjectBytes int `json:"objectBytes"`
	// Policy, Binding and Param identify the invocation.
	Policy  string `json:"policy"`
	Binding string `json:"binding,omitempty"`
	Param   string `json:"param,omitempty"`
	// Path is the field path of the expression in the policy.
	Path string `json:"path"`
	// Kind is "variable", "matchCondition", "applyConfiguration" or
	// "jsonPatch"; for a ValidatingAdmissionPolicy's expressions (RunFiles)
	// also "validation", "messageExpression" or "auditAnnotation".
	Kind string `json:"kind"`
	// RuntimeCost is the cost charged for one evaluation, variables it
	// evaluated first included (as kube-apiserver charges them).
	RuntimeCost int64 `json:"runtimeCost"`
	// StaticMin and StaticMax are the static estimate (MaxUint64: unbounded).
	StaticMin uint64 `json:"staticMin"`
	StaticMax uint64 `json:"staticMax"`
	// NsPerOp, AllocsPerOp and BytesPerOp are per evaluation, with a fresh
	// activation each time (as kube-apiserver creates one per mutation).
	NsPerOp     float64 `json:"nsPerOp"`
	AllocsPerOp float64 `json:"allocsPerOp"`
	BytesPerOp  float64 `json:"bytesPerOp"`
	// Iterations is how many evaluations were timed.
	Iterations int `json:"iterations"`
	// Err is the evaluation error, if the expression failed.
	Err string `json:"error,omitempty"`
}

// Key identifies a measurement across runs (for baselines).
func (m Measurement) Key() string {
	return fmt.Sprintf("%s|%s|%s|%s|%d", m.Fixture, m.Policy, m.Binding, m.Path, m.Scale)
}

// CostPerMicrosecond is the calibration of cost units to time on this
// machine for this expression (0 when not measurable).
func (m Measurement) CostPerMicrosecond() float64 {
	if m.NsPerOp <= 0 {
		return 0
	}
	return float64(m.RuntimeCost) / (m.NsPerOp / 1000)
}

// LimitShare is the share of the per-call limit one evaluation uses.
func (m Measurement) LimitShare() float64 {
	return float64(m.RuntimeCost) / compiler.PerCallLimit
}

// Run measures every expression of every invocation that matches each
// fixture at each scale. Policies that match no fixture are not measured.
func Run(ctx context.Context, c *cluster.Cluster, ev *engine.Evaluator, fixtures []Fixture, opts Options) ([]Measurement, error) {
	scales := opts.Scales
	if len(scales) == 0 {
		scales = []int{1}
	}
	benchTime := opts.BenchTime
	if benchTime <= 0 {
		benchTime = 100 * time.Millisecond
	}
	type job struct {
		fixture string
		scale   int
		size    int
		inv     engine.InvocationInput
		expr    *compiler.Expression
	}
	var jobs []job
	for _, f := range fixtures {
		for _, n := range scales {
			if n < 1 {
				return nil, fmt.Errorf("scale %d: must be at least 1", n)
			}
			req := f.Request
			req.Object, req.OldObject = scaleOrNil(req.Object, n), scaleOrNil(req.OldObject, n)
			attrs, err := c.Attributes(req)
			if err != nil {
				return nil, fmt.Errorf("fixture %s: %w", f.Name, err)
			}
			size := 0
			if obj := req.Object; obj != nil {
				if data, err := obj.MarshalJSON(); err == nil {
					size = len(data)
				}
			}
			invs, err := ev.Inputs(ctx, attrs)
			if err != nil {
				return nil, fmt.Errorf("fixture %s at scale %d: %w", f.Name, n, err)
			}
			for _, inv := range invs {
				p := inv.Compiled
				for _, group := range [][]*compiler.Expression{p.Variables, p.MatchConditions, p.Mutations} {
					for _, e := range group {
						jobs = append(jobs, job{fixture: f.Name, scale: n, size: size, inv: inv, expr: e})
					}
				}
			}
		}
	}
	out := make([]Measurement, 0, len(jobs))
	for i, j := range jobs {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		in := j.inv.Mutations
		if j.expr.Kind == compiler.KindMatchCondition {
			in = j.inv.MatchConditions
		}
		m := measure(ctx, j.inv.Compiled, j.expr, in, benchTime)
		m.Fixture, m.Scale, m.ObjectBytes = j.fixture, j.scale, j.size
		m.Policy, m.Binding, m.Param = j.inv.Policy, j.inv.Binding, j.inv.Param
		out = append(out, m)
		if opts.Progress != nil {
			opts.Progress(i+1, len(jobs))
		}
	}
	return out, nil
}

func scaleOrNil(u *unstructured.Unstructured, n int) *unstructured.Unstructured {
	if u == nil {
		return nil
	}
	if n == 1 {
		return u.DeepCopy()
	}
	return &unstructured.Unstructured{Object: Scale(u.Object, n)}
}

// measure evaluates e repeatedly with a fresh activation until benchTime
// has passed, the way testing.B grows its N.
func measure(ctx context.Context, p *compiler.Policy, e *compiler.Expression, in compiler.Input, benchTime time.Duration) Measurement {
	m := Measurement{Path: e.Path.String(), Kind: kindName(e.Kind), StaticMin: e.Cost.Min, StaticMax: e.Cost.Max}
	budget := int64(compiler.MutationBudget)
	if e.Kind == compiler.KindMatchCondition {
		budget = compiler.MatchConditionsBudget
	}
	once := func() (compiler.Result, error) {
		r, _, err := p.NewActivation(ctx, in).Eval(e, budget)
		return r, err
	}
	r, err := once()
	switch {
	case err != nil:
		m.Err = err.Error()
	case r.Err != nil:
		m.Err = r.Err.Error()
	}
	m.RuntimeCost = r.Cost
	n := 1
	for {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		start := time.Now()
		for i := 0; i < n; i++ {
			_, _ = once()
		}
		elapsed := time.Since(start)
		runtime.ReadMemStats(&after)
		if elapsed >= benchTime || n >= 1e9 || ctx.Err() != nil {
			m.Iterations = n
			m.NsPerOp = float64(elapsed.Nanoseconds()) / float64(n)
			m.AllocsPerOp = float64(after.Mallocs-before.Mallocs) / float64(n)
			m.BytesPerOp = float64(after.TotalAlloc-before.TotalAlloc) / float64(n)
			return m
		}
		// Aim for benchTime with 20% headroom, growing at most 100× per
		// round, as testing.B does.
		next := n * 100
		if elapsed > 0 {
			predicted := int(int64(n) * int64(benchTime) * 6 / 5 / elapsed.Nanoseconds())
			if predicted < next {
				next = predicted
			}
		}
		if next <= n {
			next = n + 1
		}
		n = next
	}
}

func kindName(k compiler.Kind) string {
	switch k {
	case compiler.KindVariable:
		return "variable"
	case compiler.KindMatchCondition:
		return "matchCondition"
	case compiler.KindJSONPatch:
		return "jsonPatch"
	default:
		return "applyConfiguration"
	}
}

// Scale returns a deep copy of obj in which every list holds its items n
// times. Copies of strings and of maps with a "name" (or "key") field get
// a "-<i>" suffix so that set-like and keyed lists stay valid.
func Scale(obj map[string]any, n int) map[string]any {
	return scaleValue(obj, n).(map[string]any)
}

func scaleValue(v any, n int) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[k] = scaleValue(x, n)
		}
		return out
	case []any:
		out := make([]any, 0, len(t)*n)
		for copyIndex := 0; copyIndex < n; copyIndex++ {
			for _, x := range t {
				out = append(out, renamed(scaleValue(x, n), copyIndex))
			}
		}
		return out
	default:
		return v
	}
}

func renamed(v any, copyIndex int) any {
	if copyIndex == 0 {
		return v
	}
	suffix := fmt.Sprintf("-%d", copyIndex)
	switch t := v.(type) {
	case string:
		return t + suffix
	case map[string]any:
		for _, k := range []string{"name", "key"} {
			if s, ok := t[k].(string); ok {
				t[k] = s + suffix
				return t
			}
		}
	}
	return v
}

// Sort orders measurements by fixture, policy, binding, path, then scale.
func Sort(ms []Measurement) {
	slices.SortStableFunc(ms, func(a, b Measurement) int {
		return cmp.Or(cmp.Compare(a.Fixture, b.Fixture), cmp.Compare(a.Policy, b.Policy),
			cmp.Compare(a.Binding, b.Binding), cmp.Compare(a.Path, b.Path), cmp.Compare(a.Scale, b.Scale))
	})
}

// FixturesFromObjects turns loaded objects into CREATE fixtures.
func FixturesFromObjects(objs []*unstructured.Unstructured, names []string) []Fixture {
	out := make([]Fixture, len(objs))
	for i, o := range objs {
		out[i] = Fixture{Name: names[i], Request: cluster.Request{Object: o}}
	}
	return out
}
