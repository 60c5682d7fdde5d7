package harness

import (
	"bytes"
	"context"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/cluster"
	"github.com/mutatis-dev/mutatis/engine"
	"github.com/mutatis-dev/mutatis/manifest"
)

// policies returns a policy that labels Deployments with their container
// names; work repeats the comprehension to make it proportionally dearer.
func policies(t *testing.T, work int) string {
	t.Helper()
	expr := "object.spec.template.spec.containers.map(c, c.name).size()"
	parts := make([]string, work)
	for i := range parts {
		parts[i] = expr
	}
	return `
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: count-containers}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [apps], apiVersions: [v1], operations: [CREATE], resources: [deployments]}
  variables:
  - name: names
    expression: object.spec.template.spec.containers.map(c, c.name)
  matchConditions:
  - name: has-containers
    expression: size(object.spec.template.spec.containers) > 0
  reinvocationPolicy: Never
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: >
        Object{metadata: Object.metadata{labels: {"containers": string(` + strings.Join(parts, " + ") + `), "first": string(variables.names[0])}}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: count-containers}
spec:
  policyName: count-containers
`
}

const deployment = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: app, image: nginx}
      - {name: proxy, image: envoy}
`

func setup(t *testing.T, work int) (*cluster.Cluster, *engine.Evaluator, []Fixture) {
	t.Helper()
	ctx := context.Background()
	set, err := manifest.Load(ctx, []string{"-"}, strings.NewReader(policies(t, work)))
	if err != nil {
		t.Fatal(err)
	}
	c, err := cluster.New(nil, cluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var ps []*admissionregistrationv1.MutatingAdmissionPolicy
	var bs []*admissionregistrationv1.MutatingAdmissionPolicyBinding
	for _, p := range set.Policies {
		ps = append(ps, p.Policy)
	}
	for _, b := range set.Bindings {
		bs = append(bs, b.Binding)
	}
	ev, err := c.Evaluator(nil, ps, bs)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := manifest.Load(ctx, []string{"-"}, strings.NewReader(deployment))
	if err != nil {
		t.Fatal(err)
	}
	return c, ev, []Fixture{{Name: "deployment.yaml", Request: cluster.Request{Object: objs.Objects[0].Object}}}
}

func TestRunMatchesTheEngine(t *testing.T) {
	ctx := context.Background()
	c, ev, fixtures := setup(t, 1)
	var progress []int
	ms, err := Run(ctx, c, ev, fixtures, Options{Scales: []int{1, 10}, BenchTime: 1, Progress: func(done, total int) { progress = append(progress, done, total) }})
	if err != nil {
		t.Fatal(err)
	}
	// variable + matchCondition + mutation, at two scales.
	if len(ms) != 6 {
		t.Fatalf("%d measurements, want 6: %+v", len(ms), ms)
	}
	if progress[len(progress)-2] != 6 || progress[len(progress)-1] != 6 {
		t.Errorf("progress ended at %v", progress[len(progress)-2:])
	}
	byKey := map[string]Measurement{}
	for _, m := range ms {
		if m.Err != "" {
			t.Fatalf("%s: %s", m.Path, m.Err)
		}
		if m.Iterations < 1 || m.NsPerOp <= 0 {
			t.Errorf("%s: %d iterations, %f ns/op", m.Path, m.Iterations, m.NsPerOp)
		}
		byKey[m.Kind+"@"+string(rune('0'+m.Scale/10))] = m
	}
	// The mutation's runtime cost at ×1 is what the engine charges when it
	// admits the same request (variables it evaluates included).
	attrs, err := c.Attributes(cluster.Request{Object: fixtures[0].Request.Object.DeepCopy()})
	if err != nil {
		t.Fatal(err)
	}
	res, err := new(chain.Runner).Run(ctx, attrs, ev)
	if err != nil || res.Denied != nil {
		t.Fatalf("admit: %v %v", err, res.Denied)
	}
	want := res.Invocations[0].Mutations[0].Cost
	if got := byKey["applyConfiguration@0"].RuntimeCost; got != want || want == 0 {
		t.Errorf("mutation cost at ×1 = %d, engine charged %d", got, want)
	}
	for _, kind := range []string{"variable", "matchCondition", "applyConfiguration"} {
		one, ten := byKey[kind+"@0"], byKey[kind+"@1"]
		if one.ObjectBytes >= ten.ObjectBytes {
			t.Errorf("%s: object did not grow: %d → %d bytes", kind, one.ObjectBytes, ten.ObjectBytes)
		}
		if kind != "matchCondition" && ten.RuntimeCost <= one.RuntimeCost {
			t.Errorf("%s: cost did not grow with 10× the containers: %d → %d", kind, one.RuntimeCost, ten.RuntimeCost)
		}
	}
	// size() of a list is constant cost: the matchCondition does not grow.
	if a, b := byKey["matchCondition@0"].RuntimeCost, byKey["matchCondition@1"].RuntimeCost; a != b {
		t.Errorf("matchCondition cost %d → %d, want constant", a, b)
	}
}

func TestBaselineCompare(t *testing.T) {
	ctx := context.Background()
	measure := func(work int) []Measurement {
		c, ev, fixtures := setup(t, work)
		ms, err := Run(ctx, c, ev, fixtures, Options{Scales: []int{1, 10}, BenchTime: 1})
		if err != nil {
			t.Fatal(err)
		}
		return ms
	}
	base := measure(1)
	var saved bytes.Buffer
	if err := WriteJSON(&saved, base); err != nil {
		t.Fatal(err)
	}
	loaded, err := ReadBaseline(&saved)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		current  []Measurement
		maxPct   float64
		wantKeys []string
	}{
		{name: "the same policy does not regress in cost", current: measure(1), maxPct: 10},
		// Doubling the comprehension adds 36 of 184 cost units at ×1
		// (+20%) and 288 of 688 at ×10 (+42%).
		{name: "a policy doing twice the work regresses", current: measure(2), maxPct: 15, wantKeys: []string{
			"deployment.yaml|count-containers|count-containers|spec.mutations[0].applyConfiguration.expression|1",
			"deployment.yaml|count-containers|count-containers|spec.mutations[0].applyConfiguration.expression|10",
		}},
		{name: "a generous threshold lets it pass", current: measure(2), maxPct: 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var keys []string
			for _, r := range Compare(loaded, tc.current, tc.maxPct, MetricCost) {
				keys = append(keys, r.Key)
				if !strings.Contains(r.String(), "cost") {
					t.Errorf("regression text %q", r)
				}
			}
			if strings.Join(keys, "\n") != strings.Join(tc.wantKeys, "\n") {
				t.Errorf("regressions:\n%s\nwant:\n%s", strings.Join(keys, "\n"), strings.Join(tc.wantKeys, "\n"))
			}
		})
	}
	if _, err := ReadBaseline(strings.NewReader(`{"kind":"Other"}`)); err == nil || !strings.Contains(err.Error(), "want BenchResult") {
		t.Errorf("wrong kind accepted: %v", err)
	}
}

func TestScale(t *testing.T) {
	in := map[string]any{
		"metadata": map[string]any{"finalizers": []any{"a"}},
		"spec": map[string]any{
			"containers":  []any{map[string]any{"name": "app", "ports": []any{map[string]any{"containerPort": int64(80)}}}},
			"tolerations": []any{map[string]any{"key": "k"}},
		},
	}
	out := Scale(in, 3)
	u := &unstructured.Unstructured{Object: out}
	fin := u.GetFinalizers()
	if strings.Join(fin, ",") != "a,a-1,a-2" {
		t.Errorf("finalizers %v", fin)
	}
	cs, _, _ := unstructured.NestedSlice(out, "spec", "containers")
	var names []string
	for _, c := range cs {
		m := c.(map[string]any)
		names = append(names, m["name"].(string))
		if ports := m["ports"].([]any); len(ports) != 3 {
			t.Errorf("nested list has %d items, want 3", len(ports))
		}
	}
	if strings.Join(names, ",") != "app,app-1,app-2" {
		t.Errorf("container names %v", names)
	}
	tol, _, _ := unstructured.NestedSlice(out, "spec", "tolerations")
	if tol[2].(map[string]any)["key"] != "k-2" {
		t.Errorf("tolerations %v", tol)
	}
	// The input is untouched.
	if len(in["spec"].(map[string]any)["containers"].([]any)) != 1 {
		t.Error("Scale modified its input")
	}
}

func TestReports(t *testing.T) {
	c, ev, fixtures := setup(t, 1)
	ms, err := Run(context.Background(), c, ev, fixtures, Options{Scales: []int{1, 10}, BenchTime: 1})
	if err != nil {
		t.Fatal(err)
	}
	Sort(ms)
	var table, chart, page bytes.Buffer
	if err := WriteTable(&table, ms); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"FIXTURE", "count-containers/count-containers", "spec.variables[0].expression", "×10", "unbounded"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	WriteChart(&chart, ms)
	if got := strings.Count(chart.String(), "per-call limit 1000000"); got != 3 {
		t.Errorf("chart has %d series, want 3:\n%s", got, chart.String())
	}
	if err := WriteHTML(&page, ms); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<svg", `class="cost"`, `class="limit"`, "count-containers/count-containers spec.mutations[0].applyConfiguration.expression on deployment.yaml"} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
}

// TestCompareMetrics checks Compare on measurements with known figures: a
// run twice as slow (the same cost) regresses on time and not on cost, a
// costlier run on cost; both looks at each; measurements without a
// counterpart, and time baselines of zero, are not compared.
func TestCompareMetrics(t *testing.T) {
	m := func(path string, cost int64, ns float64) Measurement {
		return Measurement{Fixture: "pod.yaml", Scale: 1, Policy: "p", Path: path, RuntimeCost: cost, NsPerOp: ns}
	}
	base := []Measurement{m("a", 100, 1000), m("b", 100, 1000), m("c", 100, 0)}
	for _, tc := range []struct {
		name    string
		current []Measurement
		metric  Metric
		maxPct  float64
		want    []string
	}{
		{"twice as slow fails on time", []Measurement{m("a", 100, 2000)}, MetricTime, 50,
			[]string{"pod.yaml|p||a|1: time 1000 → 2000 ns/op (+100.0%)"}},
		{"twice as slow passes a 150% threshold", []Measurement{m("a", 100, 2000)}, MetricTime, 150, nil},
		{"twice as slow passes on cost", []Measurement{m("a", 100, 2000)}, MetricCost, 10, nil},
		{"costlier fails on cost only", []Measurement{m("b", 130, 1000)}, MetricBoth, 10,
			[]string{"pod.yaml|p||b|1: cost 100 → 130 cost units (+30.0%)"}},
		{"both regress", []Measurement{m("a", 130, 3000)}, MetricBoth, 10,
			[]string{"pod.yaml|p||a|1: cost 100 → 130 cost units (+30.0%)", "pod.yaml|p||a|1: time 1000 → 3000 ns/op (+200.0%)"}},
		{"faster is no regression", []Measurement{m("a", 50, 10)}, MetricBoth, 0, nil},
		{"no counterpart", []Measurement{m("new", 1e6, 1e9)}, MetricBoth, 0, nil},
		{"no time baseline", []Measurement{m("c", 100, 5000)}, MetricTime, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, r := range Compare(base, tc.current, tc.maxPct, tc.metric) {
				got = append(got, r.String())
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("regressions:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}
