package coverage

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"html/template"
	"regexp"
	"strings"
	"sync"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/cluster"
	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/manifest"
)

// suite is a crafted policy set whose branch structure is known; the
// comments give every decision in Decisions order.
const suite = `
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: team-label}
spec:
  reinvocationPolicy: Never
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  variables:
  # ?: cond, has(), && "team" in …
  - name: team
    expression: 'has(object.metadata.labels) && "team" in object.metadata.labels ? object.metadata.labels["team"] : "none"'
  # predicate (never evaluated: nothing uses the variable)
  - name: unused
    expression: 'object.spec.containers.exists(c, c.image.startsWith("registry.example.com/"))'
  matchConditions:
  # || startsWith (through the negation), || namespace == …
  - name: not-system
    expression: '!object.metadata.name.startsWith("system-") || object.metadata.namespace == "kube-system"'
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: 'Object{metadata: Object.metadata{labels: {"team": variables.team}}}'
  # ?: cond, orValue receiver, optional ?.annotations
  - patchType: JSONPatch
    jsonPatch:
      expression: 'object.metadata.?annotations["skip"].orValue("") == "true" ? [] : [JSONPatch{op: "add", path: "/metadata/labels/seen", value: "yes"}]'
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: team-label-all}
spec: {policyName: team-label}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: team-label-never}
spec:
  policyName: team-label
  matchResources:
    namespaceSelector: {matchLabels: {env: never}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: configmaps-only}
spec:
  reinvocationPolicy: Never
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
  variables:
  # has() (also the ?: condition)
  - name: sized
    expression: 'has(object.data) ? size(object.data) : 0'
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: 'Object{metadata: Object.metadata{labels: {"size": string(variables.sized)}}}'
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: configmaps-only}
spec: {policyName: configmaps-only}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: owned}
spec:
  reinvocationPolicy: Never
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  matchConditions:
  # has(), && hasValue(), optional ?.owner
  - name: has-owner
    expression: 'has(object.metadata.annotations) && object.metadata.annotations.?owner.hasValue()'
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: 'Object{metadata: Object.metadata{labels: {"owned": "true"}}}'
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: owned}
spec: {policyName: owned}
`

// requests: a labelled, annotated Pod and a bare one.
func requests() []*unstructured.Unstructured {
	web := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "web", "labels": map[string]any{"team": "shop"}, "annotations": map[string]any{"owner": "alice"}},
		"spec":     map[string]any{"containers": []any{map[string]any{"name": "app", "image": "nginx"}}},
	}}
	api := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "api"},
		"spec":     map[string]any{"containers": []any{map[string]any{"name": "app", "image": "nginx"}}},
	}}
	return []*unstructured.Unstructured{web, api}
}

type fixture struct {
	policies []*admissionregistrationv1.MutatingAdmissionPolicy
	bindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding
	cluster  *cluster.Cluster
}

func load(t *testing.T) fixture {
	t.Helper()
	set, err := manifest.Load(context.Background(), []string{"-"}, strings.NewReader(suite))
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Rejected) > 0 {
		t.Fatalf("rejected policies: %v", set.Rejected)
	}
	var f fixture
	for _, p := range set.Policies {
		f.policies = append(f.policies, p.Policy)
	}
	for _, b := range set.Bindings {
		f.bindings = append(f.bindings, b.Binding)
	}
	if f.cluster, err = cluster.New(set.Objects, cluster.Options{}); err != nil {
		t.Fatal(err)
	}
	return f
}

// evaluator returns an Evaluator whose compiler reports to rec (when
// observe) and a function admitting a request and recording its result.
func (f fixture) evaluator(t *testing.T, rec *Recorder, observe bool) func(*unstructured.Unstructured) chain.Result {
	t.Helper()
	var opts []compiler.Option
	if observe {
		opts = append(opts, rec.CompilerOption())
	}
	comp, err := compiler.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := f.cluster.Evaluator(comp, f.policies, f.bindings)
	if err != nil {
		t.Fatal(err)
	}
	return func(obj *unstructured.Unstructured) chain.Result {
		attrs, err := f.cluster.Attributes(cluster.Request{Object: obj.DeepCopy()})
		if err != nil {
			t.Error(err)
			return chain.Result{}
		}
		res, err := new(chain.Runner).Run(context.Background(), attrs, ev)
		if err != nil || res.Denied != nil {
			t.Errorf("admit %s: %v %v", obj.GetName(), err, res.Denied)
		}
		rec.RecordResult(res)
		return res
	}
}

func run(t *testing.T, observe bool) (*Report, fixture) {
	f := load(t)
	rec := NewRecorder()
	admit := f.evaluator(t, rec, observe)
	for _, obj := range requests() {
		admit(obj)
	}
	return rec.Report(f.policies, f.bindings), f
}

func policy(t *testing.T, r *Report, name string) PolicyReport {
	t.Helper()
	for _, p := range r.Policies {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("no policy %s in the report", name)
	return PolicyReport{}
}

func expression(t *testing.T, p PolicyReport, path string) ExpressionReport {
	t.Helper()
	for _, e := range p.Expressions {
		if e.Path == path {
			return e
		}
	}
	t.Fatalf("no expression %s in policy %s", path, p.Name)
	return ExpressionReport{}
}

// outcomes renders decisions as "kind text: T F" with "-" for unseen.
func outcomes(e ExpressionReport) []string {
	var out []string
	for _, d := range e.Decisions {
		mark := func(seen bool, s string) string {
			if seen {
				return s
			}
			return "-"
		}
		out = append(out, fmt.Sprintf("%s `%s`: %s%s", d.Kind, d.Text, mark(d.True, "T"), mark(d.False, "F")))
	}
	return out
}

func c(covered, total int) Count { return Count{Covered: covered, Total: total} }

func TestCoverageOfACraftedSuite(t *testing.T) {
	r, _ := run(t, true)

	t.Run("counts per policy and in total are exact", func(t *testing.T) {
		for _, tc := range []struct {
			policy  string
			want    Counts
			percent float64
		}{
			// team-label: 2 mutations evaluated; 1 of 2 bindings invoked;
			// not-system only true; 1 of 2 variables evaluated; branches
			// 5/6 (team) + 0/2 (unused) + 1/4 (not-system) + 4/6 (JSONPatch).
			{"team-label", Counts{Mutations: c(2, 2), Bindings: c(1, 2), MatchConditions: c(1, 2), Variables: c(1, 2), Branches: c(10, 18), Total: c(15, 26)}, 100 * 15.0 / 26},
			// configmaps-only: never selected by a Pod request.
			{"configmaps-only", Counts{Mutations: c(0, 1), Bindings: c(0, 1), MatchConditions: c(0, 0), Variables: c(0, 1), Branches: c(0, 2), Total: c(0, 5)}, 0},
			// owned: has-owner true for web, false for api; branches 4/6.
			{"owned", Counts{Mutations: c(1, 1), Bindings: c(1, 1), MatchConditions: c(2, 2), Variables: c(0, 0), Branches: c(4, 6), Total: c(8, 10)}, 80},
		} {
			p := policy(t, r, tc.policy)
			if p.Counts != tc.want {
				t.Errorf("%s: counts\n got %+v\nwant %+v", tc.policy, p.Counts, tc.want)
			}
			if got := p.Counts.Total.Percent(); got != tc.percent {
				t.Errorf("%s: %v%%, want %v%%", tc.policy, got, tc.percent)
			}
		}
		want := Counts{Mutations: c(3, 4), Bindings: c(2, 4), MatchConditions: c(3, 4), Variables: c(1, 3), Branches: c(14, 26), Total: c(23, 41)}
		if r.Totals != want {
			t.Errorf("totals\n got %+v\nwant %+v", r.Totals, want)
		}
		if got := r.Percent(); got != 100*23.0/41 {
			t.Errorf("Percent() = %v, want %v", got, 100*23.0/41)
		}
	})

	t.Run("every decision has its observed outcomes", func(t *testing.T) {
		for _, tc := range []struct {
			policy, path string
			evaluations  int
			want         []string
		}{
			// A conditional taken both ways; has() both ways; the && operand
			// after has() is only reached when labels exist (true only).
			{"team-label", "spec.variables[0].expression", 2, []string{
				"?: `has(object.metadata.labels) && \"team\" in object.metadata.labels`: TF",
				"has() `has(object.metadata.labels)`: TF",
				"&& `\"team\" in object.metadata.labels`: T-"}},
			{"team-label", "spec.variables[1].expression", 0, []string{
				"predicate `c.image.startsWith(\"registry.example.com/\")`: --"}},
			// The right operand of || is never evaluated: the left is always
			// false under its negation, so the condition is always true.
			{"team-label", "spec.matchConditions[0].expression", 4, []string{
				"|| `object.metadata.name.startsWith(\"system-\")`: -F",
				"|| `object.metadata.namespace == \"kube-system\"`: --"}},
			{"team-label", "spec.mutations[0].applyConfiguration.expression", 2, nil},
			// The ?: is taken one way only (50% of that decision).
			{"team-label", "spec.mutations[1].jsonPatch.expression", 2, []string{
				"?: `object.metadata.?annotations[\"skip\"].orValue(\"\") == \"true\"`: -F",
				"orValue `object.metadata.?annotations[\"skip\"]`: -F",
				"optional `object.metadata.?annotations`: TF"}},
			{"configmaps-only", "spec.variables[0].expression", 0, []string{"has() `has(object.data)`: --"}},
			{"owned", "spec.matchConditions[0].expression", 4, []string{
				"has() `has(object.metadata.annotations)`: TF",
				"&& `object.metadata.annotations.?owner.hasValue()`: T-",
				"optional `object.metadata.annotations.?owner`: T-"}},
		} {
			e := expression(t, policy(t, r, tc.policy), tc.path)
			if e.Evaluations != tc.evaluations {
				t.Errorf("%s %s: evaluated %d times, want %d", tc.policy, tc.path, e.Evaluations, tc.evaluations)
			}
			if got := outcomes(e); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("%s %s:\n got %q\nwant %q", tc.policy, tc.path, got, tc.want)
			}
		}
	})

	t.Run("matchConditions, bindings and expressions have states", func(t *testing.T) {
		notSystem := expression(t, policy(t, r, "team-label"), "spec.matchConditions[0].expression")
		if !notSystem.True || notSystem.False || notSystem.State != StatePartial {
			t.Errorf("not-system: true %v false %v state %s, want only true, partial", notSystem.True, notSystem.False, notSystem.State)
		}
		hasOwner := expression(t, policy(t, r, "owned"), "spec.matchConditions[0].expression")
		if !hasOwner.True || !hasOwner.False {
			t.Errorf("has-owner: true %v false %v, want both", hasOwner.True, hasOwner.False)
		}
		if e := expression(t, policy(t, r, "team-label"), "spec.mutations[0].applyConfiguration.expression"); e.State != StateCovered {
			t.Errorf("an evaluated mutation without decisions is %s, want covered", e.State)
		}
		if e := expression(t, policy(t, r, "team-label"), "spec.variables[1].expression"); e.State != StateUncovered {
			t.Errorf("an unevaluated variable is %s, want uncovered", e.State)
		}
		got := fmt.Sprintf("%+v %+v", policy(t, r, "team-label").Bindings, policy(t, r, "owned").Bindings)
		// Every pass re-selects the bindings: web and api, passes 1 and 2.
		want := "[{Name:team-label-all Invocations:2 Selected:4 FalseConditions:[] State:covered} {Name:team-label-never Invocations:0 Selected:0 FalseConditions:[] State:uncovered}] " +
			"[{Name:owned Invocations:1 Selected:4 FalseConditions:[has-owner] State:covered}]"
		if got != want {
			t.Errorf("bindings\n got %s\nwant %s", got, want)
		}
	})
}

func TestCoverageFromEngineResultsAlone(t *testing.T) {
	// Without the compiler option only bindings and matchCondition results
	// are known, from the engine's trace.
	r, _ := run(t, false)
	for _, tc := range []struct {
		policy string
		want   Counts
	}{
		{"team-label", Counts{Mutations: c(0, 2), Bindings: c(1, 2), MatchConditions: c(1, 2), Variables: c(0, 2), Branches: c(0, 18), Total: c(2, 26)}},
		{"owned", Counts{Mutations: c(0, 1), Bindings: c(1, 1), MatchConditions: c(2, 2), Variables: c(0, 0), Branches: c(0, 6), Total: c(3, 10)}},
	} {
		if got := policy(t, r, tc.policy).Counts; got != tc.want {
			t.Errorf("%s: counts\n got %+v\nwant %+v", tc.policy, got, tc.want)
		}
	}
}

func TestReportOutputs(t *testing.T) {
	r, f := run(t, true)

	t.Run("the table is aligned and has a total row", func(t *testing.T) {
		var buf bytes.Buffer
		if err := r.WriteTable(&buf); err != nil {
			t.Fatal(err)
		}
		want := `POLICY           MUTATIONS  BINDINGS  MATCHCONDITIONS  VARIABLES  BRANCHES  TOTAL
configmaps-only  0/1        0/1       -                0/1        0/2       0.0%
owned            1/1        1/1       2/2              -          4/6       80.0%
team-label       2/2        1/2       1/2              1/2        10/18     57.7%
TOTAL            3/4        2/4       3/4              1/3        14/26     56.1%
`
		if buf.String() != want {
			t.Errorf("table:\n%s\nwant:\n%s", buf.String(), want)
		}
	})

	t.Run("the JSON form carries the counts and percentages", func(t *testing.T) {
		var buf bytes.Buffer
		if err := r.WriteJSON(&buf); err != nil {
			t.Fatal(err)
		}
		var back struct {
			Totals struct {
				Total struct {
					Covered, Total int
					Percent        float64
				}
			}
			Policies []struct {
				Name        string
				Expressions []struct{ Path string }
			}
		}
		if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
			t.Fatal(err)
		}
		if back.Totals.Total.Covered != 23 || back.Totals.Total.Total != 41 || back.Totals.Total.Percent != 100*23.0/41 {
			t.Errorf("JSON totals = %+v", back.Totals.Total)
		}
		if len(back.Policies) != 3 || back.Policies[2].Name != "team-label" || back.Policies[2].Expressions[4].Path != "spec.mutations[1].jsonPatch.expression" {
			t.Errorf("JSON policies = %+v", back.Policies)
		}
	})

	t.Run("the HTML page shows every source with its decisions", func(t *testing.T) {
		var buf bytes.Buffer
		if err := r.WriteHTML(&buf); err != nil {
			t.Fatal(err)
		}
		page := buf.String()
		for _, class := range []string{`class="decision covered"`, `class="decision partial"`, `class="decision uncovered"`, `class="binding uncovered"`} {
			if !strings.Contains(page, class) {
				t.Errorf("the page has no %s", class)
			}
		}
		// The text of each <pre> is the expression source, exactly.
		pre := regexp.MustCompile(`(?s)<pre class="source" data-key="([^"]*)">(.*?)</pre>`)
		tags := regexp.MustCompile(`<[^>]*>`)
		sources := map[string]string{}
		for _, m := range pre.FindAllStringSubmatch(page, -1) {
			sources[html.UnescapeString(m[1])] = html.UnescapeString(tags.ReplaceAllString(m[2], ""))
		}
		n := 0
		for _, p := range r.Policies {
			for _, e := range p.Expressions {
				n++
				if got := sources[p.Name+"/"+e.Path]; got != e.Source {
					t.Errorf("%s %s on the page: %q, want %q", p.Name, e.Path, got, e.Source)
				}
			}
		}
		if n != 9 || len(sources) != n {
			t.Errorf("%d expressions, %d sources on the page, want 9", n, len(sources))
		}
		if jp := f.policies[0].Spec.Mutations[1].JSONPatch.Expression; !strings.Contains(page, template.HTMLEscapeString(`"/metadata/labels/seen"`)) || sources["team-label/spec.mutations[1].jsonPatch.expression"] != jp {
			t.Errorf("the JSONPatch source %q is not on the page", jp)
		}
		// The half-taken ?: of the JSONPatch wraps its (partial) condition.
		want := `<span class="decision partial" title="?: (true never, false seen)">`
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %s", want)
		}
	})
}

func TestRecorderIsSafeForConcurrentUse(t *testing.T) {
	sequential, _ := run(t, true)

	f := load(t)
	rec := NewRecorder()
	admit := f.evaluator(t, rec, true)
	const workers, rounds = 8, 5
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < rounds; i++ {
				for _, obj := range requests() {
					admit(obj)
				}
				// Reports may be taken while cases still run.
				rec.Report(f.policies, f.bindings)
			}
		}()
	}
	wg.Wait()
	parallel := rec.Report(f.policies, f.bindings)
	if parallel.Totals != sequential.Totals {
		t.Errorf("parallel totals %+v, sequential %+v", parallel.Totals, sequential.Totals)
	}
	e := expression(t, policy(t, parallel, "team-label"), "spec.variables[0].expression")
	if e.Evaluations != 2*workers*rounds {
		t.Errorf("team evaluated %d times, want %d", e.Evaluations, 2*workers*rounds)
	}
}
