package compiler

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/cel/environment"
)

// policy builds a MutatingAdmissionPolicy from expressions.
type policySpec struct {
	params     bool
	variables  [][2]string // name, expression
	conditions [][2]string
	ac         []string
	jp         []string
}

func (s policySpec) build() *admissionregistrationv1.MutatingAdmissionPolicy {
	p := &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	if s.params {
		p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
	}
	for _, v := range s.variables {
		p.Spec.Variables = append(p.Spec.Variables, admissionregistrationv1.Variable{Name: v[0], Expression: v[1]})
	}
	for _, c := range s.conditions {
		p.Spec.MatchConditions = append(p.Spec.MatchConditions, admissionregistrationv1.MatchCondition{Name: c[0], Expression: c[1]})
	}
	for _, e := range s.ac {
		p.Spec.Mutations = append(p.Spec.Mutations, admissionregistrationv1.Mutation{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
			ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: e}})
	}
	for _, e := range s.jp {
		p.Spec.Mutations = append(p.Spec.Mutations, admissionregistrationv1.Mutation{PatchType: admissionregistrationv1.PatchTypeJSONPatch,
			JSONPatch: &admissionregistrationv1.JSONPatch{Expression: e}})
	}
	return p
}

// upstreamErrors compiles the policy with k8s.io/apiserver's composited
// compiler (the oracle) and returns the error text of every expression in
// our order: variables, matchConditions, mutations ("" when it compiled).
func upstreamErrors(t *testing.T, p *admissionregistrationv1.MutatingAdmissionPolicy) []string {
	t.Helper()
	opts := plugincel.OptionalVariableDeclarations{HasParams: p.Spec.ParamKind != nil, HasAuthorizer: true}
	c, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	str := func(e error) string {
		if e == nil {
			return ""
		}
		return e.Error()
	}
	for _, v := range p.Spec.Variables {
		r := c.CompileAndStoreVariable(&validating.Variable{Name: v.Name, Expression: v.Expression}, opts, environment.StoredExpressions)
		if r.Error != nil {
			out = append(out, r.Error.Error())
		} else {
			out = append(out, "")
		}
	}
	for i := range p.Spec.MatchConditions {
		ev := c.CompileCondition([]plugincel.ExpressionAccessor{(*matchconditions.MatchCondition)(&p.Spec.MatchConditions[i])}, opts, environment.StoredExpressions)
		out = append(out, str(errors.Join(ev.CompilationErrors()...)))
	}
	popts := opts
	popts.HasPatchTypes = true
	for _, m := range p.Spec.Mutations {
		var acc plugincel.ExpressionAccessor
		if m.ApplyConfiguration != nil {
			acc = &patch.ApplyConfigurationCondition{Expression: m.ApplyConfiguration.Expression}
		} else {
			acc = &patch.JSONPatchCondition{Expression: m.JSONPatch.Expression}
		}
		ev := c.CompileMutatingEvaluator(acc, popts, environment.StoredExpressions)
		out = append(out, str(errors.Join(ev.CompilationErrors()...)))
	}
	return out
}

func TestCompileMatchesUpstream(t *testing.T) {
	cases := []struct {
		name    string
		spec    policySpec
		wantErr []string // substrings expected per expression ("" = compiles)
	}{
		{name: "an apply configuration setting a label compiles",
			spec:    policySpec{ac: []string{`Object{metadata: Object.metadata{labels: {"a": "b"}}}`}},
			wantErr: []string{""}},
		{name: "a JSON patch list compiles",
			spec:    policySpec{jp: []string{`[JSONPatch{op: "add", path: "/metadata/labels/" + jsonpatch.escapeKey("a/b"), value: "x"}]`}},
			wantErr: []string{""}},
		{name: "a string where an Object belongs is refused",
			spec:    policySpec{ac: []string{`"x"`}},
			wantErr: []string{"must evaluate to Object but got string"}},
		{name: "a list of maps where JSONPatch belongs is refused",
			spec:    policySpec{jp: []string{`[{"op": "add"}]`}},
			wantErr: []string{"must evaluate to list(JSONPatch) but got list(map(string, string))"}},
		{name: "a syntax error is reported with a caret",
			spec:    policySpec{ac: []string{"Object{metadata: \n  Object.metadata{labels: {\"a\": }}}"}},
			wantErr: []string{"compilation failed: ERROR: <input>:2:"}},
		{name: "params without a paramKind is an undeclared reference",
			spec:    policySpec{ac: []string{`Object{metadata: Object.metadata{labels: params.data}}`}},
			wantErr: []string{"undeclared reference to 'params'"}},
		{name: "params with a paramKind compiles",
			spec:    policySpec{params: true, ac: []string{`Object{metadata: Object.metadata{labels: params.data}}`}},
			wantErr: []string{""}},
		{name: "a variable sees only earlier variables",
			spec: policySpec{variables: [][2]string{{"a", "variables.b"}, {"b", "1"}, {"c", "variables.b + 1"}},
				ac: []string{`Object{spec: Object.spec{replicas: variables.c}}`}},
			wantErr: []string{"undefined field 'b'", "", "", ""}},
		{name: "a variable sees only earlier variables when a policy declaring them compiled first",
			spec: policySpec{variables: [][2]string{{"b", "1"}, {"a", "variables.b"}},
				ac: []string{`Object{spec: Object.spec{replicas: variables.a}}`}},
			wantErr: []string{"", "", ""}},
		{name: "so a reference to a later variable still fails",
			spec: policySpec{variables: [][2]string{{"a", "variables.b"}, {"b", "1"}},
				ac: []string{`Object{spec: Object.spec{replicas: variables.b}}`}},
			wantErr: []string{"undefined field 'b'", "", ""}},
		{name: "a variable with the name of an earlier one's later type",
			spec: policySpec{variables: [][2]string{{"b", `"x"`}, {"a", "variables.b + 1"}},
				ac: []string{`Object{}`}},
			wantErr: []string{"", "found no matching overload for '_+_'", ""}},
		{name: "the variables type's fields are not type names",
			spec: policySpec{variables: [][2]string{{"l", `["x"]`}, {"m", `{"k": 1}`}},
				conditions: [][2]string{{"c", `kubernetes.variables.l == kubernetes.variables.m`}},
				ac:         []string{`Object{}`}},
			wantErr: []string{"", "", "type 'type(kubernetes.variables)' does not support field selection", ""}},
		{name: "a typed variable is type checked where used",
			spec:    policySpec{variables: [][2]string{{"n", "1"}}, conditions: [][2]string{{"c", `variables.n == "x"`}}, ac: []string{`Object{}`}},
			wantErr: []string{"", "found no matching overload for '_==_'", ""}},
		{name: "a non-boolean matchCondition is refused",
			spec:    policySpec{conditions: [][2]string{{"c", `"yes"`}}, ac: []string{`Object{}`}},
			wantErr: []string{"must evaluate to bool", ""}},
		{name: "the patch types are not declared for matchConditions",
			spec:    policySpec{conditions: [][2]string{{"c", `Object{} == Object{}`}}, ac: []string{`Object{}`}},
			wantErr: []string{"undeclared reference to 'Object'", ""}},
		{name: "namespaceObject is the restricted Namespace type",
			spec:    policySpec{ac: []string{`Object{metadata: Object.metadata{labels: {"x": namespaceObject.metadata.managedFields}}}`}},
			wantErr: []string{"undefined field 'managedFields'"}},
		{name: "request is typed",
			spec:    policySpec{ac: []string{`Object{metadata: Object.metadata{labels: {"op": request.operation, "u": request.userInfo.username}}}`}},
			wantErr: []string{""}},
		{name: "authorizer is declared",
			spec:    policySpec{conditions: [][2]string{{"c", `authorizer.group("").resource("pods").check("get").allowed()`}}, ac: []string{`Object{}`}},
			wantErr: []string{"", ""}},
		{name: "kubernetes libraries are available",
			spec: policySpec{conditions: [][2]string{{"c", `quantity("1Gi").isGreaterThan(quantity("1Mi")) && isURL("https://x") && ip("10.0.0.1").family() == 4 && cidr("10.0.0.0/8").containsIP("10.1.1.1") && "a,b".split(",").size() == 2 && sets.contains([1,2],[1]) && semver("1.2.3").major() == 1 && [1,2].all(i, v, v > 0)`}},
				ac: []string{`Object{}`}},
			wantErr: []string{"", ""}},
	}
	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.spec.build()
			compiled, err := c.Compile(p)
			if err != nil {
				t.Fatal(err)
			}
			want := upstreamErrors(t, p)
			got := compiled.Expressions()
			if len(got) != len(want) || len(want) != len(tc.wantErr) {
				t.Fatalf("got %d expressions, upstream %d, table %d", len(got), len(want), len(tc.wantErr))
			}
			for i, e := range got {
				g := ""
				if e.Err != nil {
					g = e.Err.Error()
				}
				if g != want[i] {
					t.Errorf("expression %d (%s):\n ours:     %q\n upstream: %q", i, e.Source, g, want[i])
				}
				if tc.wantErr[i] == "" && g != "" || !strings.Contains(g, tc.wantErr[i]) {
					t.Errorf("expression %d: error %q, want it to contain %q", i, g, tc.wantErr[i])
				}
			}
		})
	}
}

func TestCompileIsCachedByRevision(t *testing.T) {
	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	p := policySpec{ac: []string{`Object{}`}}.build()
	a, _ := c.Compile(p)
	b, _ := c.Compile(p.DeepCopy())
	if a != b {
		t.Fatal("compiling an unchanged policy twice compiled it again")
	}
	p2 := p.DeepCopy()
	p2.Spec.Mutations[0].ApplyConfiguration.Expression = `Object{metadata: Object.metadata{labels: {"a": "b"}}}`
	d, _ := c.Compile(p2)
	if d == a {
		t.Fatal("a changed spec returned the stale compilation")
	}
	p3 := p.DeepCopy()
	p3.UID, p3.ResourceVersion = "u1", "7"
	if Key(p3) != "u1/7" {
		t.Fatalf("Key = %q, want uid/resourceVersion", Key(p3))
	}
}

// TestConcurrentCompilesCompileOnce: callers compiling the same revision
// at the same time share one compilation; while another revision of the
// same policy compiles alongside, each caller gets a compilation of the
// revision it asked for (two flights of one name never displace each
// other's waiters). Sharing is asserted only in the first round: with a
// second revision in the mix, a caller arriving after both flights landed
// finds the cache holding the other revision and rightly compiles again.
func TestConcurrentCompilesCompileOnce(t *testing.T) {
	p := policySpec{ac: []string{`Object{metadata: Object.metadata{labels: {"a": "b"}}}`}, variables: [][2]string{{"one", "1"}, {"two", "variables.one + 1"}}}.build()
	other := p.DeepCopy()
	other.Spec.Mutations[0].ApplyConfiguration.Expression = `Object{}`
	const callers = 8
	run := func(c *Compiler, pick func(i int) *admissionregistrationv1.MutatingAdmissionPolicy) []*Policy {
		got := make([]*Policy, callers)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range callers {
			wg.Go(func() {
				<-start
				var err error
				if got[i], err = c.Compile(pick(i)); err != nil {
					t.Error(err)
				}
			})
		}
		close(start)
		wg.Wait()
		return got
	}

	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	got := run(c, func(int) *admissionregistrationv1.MutatingAdmissionPolicy { return p.DeepCopy() })
	for i := 1; i < callers; i++ {
		if got[i] != got[0] {
			t.Fatalf("caller %d got another compilation of the same revision", i)
		}
	}

	for round := range 20 {
		c, err := New()
		if err != nil {
			t.Fatal(err)
		}
		got := run(c, func(i int) *admissionregistrationv1.MutatingAdmissionPolicy {
			if i%2 == 1 {
				return other.DeepCopy()
			}
			return p.DeepCopy()
		})
		for i, g := range got {
			want := p.Spec.Mutations[0].ApplyConfiguration.Expression
			if i%2 == 1 {
				want = `Object{}`
			}
			if g == nil || g.Mutations[0].Source != want {
				t.Fatalf("round %d: caller %d got the other revision's compilation", round, i)
			}
		}
	}
}

func TestErrorsCarryFieldPaths(t *testing.T) {
	c, _ := New()
	p := policySpec{variables: [][2]string{{"v", "1 +"}}, conditions: [][2]string{{"c", `"s"`}}, jp: []string{`"x"`}}.build()
	compiled, _ := c.Compile(p)
	errs := compiled.Errors()
	paths := []string{"spec.variables[0].expression", "spec.matchConditions[0].expression", "spec.mutations[0].jsonPatch.expression"}
	if len(errs) != len(paths) {
		t.Fatalf("got %d errors: %v", len(errs), errs)
	}
	for i, e := range errs {
		if e.Field != paths[i] {
			t.Errorf("error %d at %s, want %s", i, e.Field, paths[i])
		}
	}
	if !strings.Contains(errs[0].Error(), "| 1 +") {
		t.Errorf("compile error lacks the source line and caret: %s", errs[0].Error())
	}
}

func TestEvalChargesVariablesAndHonoursBudgets(t *testing.T) {
	c, _ := New()
	p := policySpec{
		variables: [][2]string{{"big", "[1,2,3,4,5,6,7,8,9,10].map(x, x * 2)"}},
		ac:        []string{`Object{spec: Object.spec{replicas: variables.big.size() + variables.big.size()}}`},
	}.build()
	compiled, _ := c.Compile(p)
	obj := map[string]any{"apiVersion": "apps/v1", "kind": "Deployment"}
	act := compiled.NewActivation(context.Background(), Input{Object: obj})
	res, remaining, err := act.Eval(compiled.Mutations[0], MutationBudget)
	if err != nil || res.Err != nil {
		t.Fatalf("eval: %v %v", err, res.Err)
	}
	if got := res.Value.Value(); got == nil {
		t.Fatal("no value")
	}
	if res.Cost <= 0 || remaining != MutationBudget-res.Cost {
		t.Fatalf("cost %d, remaining %d", res.Cost, remaining)
	}
	// The variable is charged once even though it is used twice.
	act2 := compiled.NewActivation(context.Background(), Input{Object: obj})
	if _, _, err := act2.Eval(compiled.Mutations[0], res.Cost-1); !IsOutOfBudget(err) {
		t.Fatalf("budget one short: err = %v, want out of budget", err)
	}
	if _, _, err := act2.Eval(compiled.Mutations[0], res.Cost); err != nil {
		t.Fatalf("exact budget: %v", err)
	}
}

func TestEvalPerCallLimit(t *testing.T) {
	c, _ := New()
	p := policySpec{conditions: [][2]string{{"slow", `[1,2,3,4,5,6,7,8,9,10].all(a, [1,2,3,4,5,6,7,8,9,10].all(b, [1,2,3,4,5,6,7,8,9,10].all(c, [1,2,3,4,5,6,7,8,9,10].all(d, [1,2,3,4,5,6,7,8,9,10].all(e, [1,2,3,4,5,6,7,8,9,10].all(f, a+b+c+d+e+f > 0))))))`}}, ac: []string{`Object{}`}}.build()
	compiled, _ := c.Compile(p)
	act := compiled.NewActivation(context.Background(), Input{})
	res, _, err := act.Eval(compiled.MatchConditions[0], 1<<62)
	if err != nil {
		t.Fatal(err)
	}
	want := "resulted in error: operation cancelled: actual cost limit exceeded"
	if res.Err == nil || !strings.Contains(res.Err.Error(), want) {
		t.Fatalf("err = %v, want %q", res.Err, want)
	}
}

func TestValidateAsTheAPIServerOnCreate(t *testing.T) {
	c, _ := New()
	p := policySpec{
		variables:  [][2]string{{"v", "  1  "}},
		conditions: [][2]string{{"uses-variable", "variables.v == 1"}},
		ac:         []string{"  Object{spec: }  "},
	}.build()
	errs, err := c.Validate(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(errs) != 2 {
		t.Fatalf("got %d errors, want 2: %v", len(errs), errs)
	}
	if errs[0].Field != "spec.matchConditions[0].expression" || !strings.Contains(errs[0].Error(), "undeclared reference to 'variables'") {
		t.Errorf("matchConditions are validated without variables, as upstream: %v", errs[0])
	}
	if errs[1].BadValue != "Object{spec: }" {
		t.Errorf("mutation expressions are quoted trimmed, got %q", errs[1].BadValue)
	}
	// At admission time the same matchCondition compiles (upstream compiles
	// matchConditions with the composited compiler).
	compiled, _ := c.Compile(p)
	if compiled.MatchConditions[0].Err != nil {
		t.Errorf("admission-time compile refused variables in matchConditions: %v", compiled.MatchConditions[0].Err)
	}
}

func TestPoliciesShareEnvironments(t *testing.T) {
	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	named := func(name string, s policySpec) *admissionregistrationv1.MutatingAdmissionPolicy {
		p := s.build()
		p.Name = name
		return p
	}
	// Compile concurrently (the race detector watches the shared cache);
	// every compilation must still be right on its own.
	specs := []policySpec{
		0: {ac: []string{`Object{metadata: Object.metadata{labels: {"a": "b"}}}`}},
		1: {params: true, ac: []string{`Object{metadata: Object.metadata{labels: {"a": params.data.x}}}`}},
		2: {jp: []string{`[JSONPatch{op: "add", path: "/metadata/labels/a", value: "b"}]`}},
		3: {ac: []string{`Object{metadata: Object.metadata{labels: {"a": variables.missing}}}`}},
		4: {variables: [][2]string{{"v", `"x"`}}, ac: []string{`Object{metadata: Object.metadata{labels: {"a": variables.v}}}`}},
		// Same signature as 4 (v: string), other expressions.
		5: {variables: [][2]string{{"v", `object.metadata.name + "-x"`}}, conditions: [][2]string{{"c", `variables.v != ""`}},
			jp: []string{`[JSONPatch{op: "add", path: "/metadata/labels/a", value: variables.v}]`}},
		// Same name as 4, another type: its own environment.
		6: {variables: [][2]string{{"v", `1`}}, ac: []string{`Object{spec: Object.spec{replicas: variables.v}}`}},
		// Declares v: string second; its first variable may not see it.
		7: {variables: [][2]string{{"w", `variables.v`}, {"v", `"x"`}}, ac: []string{`Object{}`}},
		// Its second variable sees what 5's matchCondition sees.
		8: {variables: [][2]string{{"v", `"y"`}, {"u", `variables.v + "z"`}}, ac: []string{`Object{}`}},
	}
	wantErrs := map[int]string{
		3: "undefined field 'missing'",
		7: "undefined field 'v'",
	}
	var wg sync.WaitGroup
	compiled := make([]*Policy, 10*len(specs))
	for i := range compiled {
		wg.Go(func() {
			p, err := c.Compile(named(fmt.Sprintf("p%d", i), specs[i%len(specs)]))
			if err != nil {
				t.Error(err)
			}
			compiled[i] = p
		})
	}
	wg.Wait()
	for i, p := range compiled {
		n := i % len(specs)
		var errs []string
		for _, e := range p.Expressions() {
			if e.Err != nil {
				errs = append(errs, e.Err.Error())
			}
		}
		switch want := wantErrs[n]; {
		case want == "" && len(errs) > 0:
			t.Errorf("policy %d (spec %d): compile errors %q", i, n, errs)
		case want != "" && (len(errs) != 1 || !strings.Contains(errs[0], want)):
			t.Errorf("policy %d (spec %d): compile errors %q, want one containing %q", i, n, errs, want)
		}
	}
	// The same spec compiled twice (under two names) shares everything.
	for n := range specs {
		a, b := compiled[n], compiled[n+len(specs)]
		if a.varType != b.varType {
			t.Errorf("spec %d: two compilations have different variables types", n)
		}
		for i, e := range a.Expressions() {
			if e.env != b.Expressions()[i].env {
				t.Errorf("spec %d: expression %d compiled in two environments", n, i)
			}
		}
	}
	shared := func(a, b int) bool { return compiled[a].varType == compiled[b].varType }
	if !shared(0, 2) || !shared(0, 3) {
		t.Error("policies without variables do not share their environments")
	}
	if shared(0, 1) {
		t.Error("a policy with params shares the environment of one without")
	}
	if !shared(4, 5) || compiled[4].Mutations[0].env != compiled[5].Mutations[0].env {
		t.Error("policies with the same variables do not share their environments")
	}
	if first := compiled[4].Variables[0].env; compiled[5].Variables[0].env != first || compiled[8].Variables[0].env != first {
		t.Error("first variables (which see no variables) do not share an environment")
	}
	if compiled[8].Variables[1].env != compiled[5].MatchConditions[0].env {
		t.Error("a variable and a matchCondition seeing the same variables do not share an environment")
	}
	if compiled[4].Variables[0].env == compiled[4].Mutations[0].env {
		t.Error("a variable and a mutation share an environment (the patch types would be visible to variables)")
	}
	if shared(4, 6) {
		t.Error("policies whose variables have different types share an environment")
	}
}

func TestEnvironmentCacheIsBounded(t *testing.T) {
	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	c.envs.max = 4
	for i := range 10 {
		// Every policy has variables of its own name: new environments.
		name := fmt.Sprintf("v%d", i)
		p := policySpec{variables: [][2]string{{name, `"x"`}},
			ac: []string{fmt.Sprintf(`Object{metadata: Object.metadata{labels: {"a": variables.%s}}}`, name)}}.build()
		p.Name = name
		compiled, err := c.Compile(p)
		if err != nil {
			t.Fatal(err)
		}
		if errs := compiled.Errors(); len(errs) > 0 {
			t.Fatalf("policy %d: %v", i, errs)
		}
		c.envs.mu.Lock()
		n := len(c.envs.envs)
		c.envs.mu.Unlock()
		if n > 4 {
			t.Fatalf("after policy %d the cache holds %d environments, want at most 4", i, n)
		}
	}
}
