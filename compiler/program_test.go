package compiler

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/cel-go/cel"
	"k8s.io/apiserver/pkg/cel/environment"
)

// planFailures are expressions whose only error is raised by env.Program
// (the planner), with kube-apiserver's texts: a folded type conversion of
// a constant, and constant patterns of the regex functions the Kubernetes
// regex library optimizes (matches has a compile-time validator instead).
var planFailures = [][2]string{
	{`int("abc") + 1`, "program instantiation failed: type conversion error from 'string' to 'int'"},
	{`"abc".find("[") == ""`, "program instantiation failed: error parsing regexp: missing closing ]: `[`"},
	{`"abc".findAll("(", 2).size()`, "program instantiation failed: error parsing regexp: missing closing ): `(`"},
	{`uint(-1) > 0u`, "program instantiation failed: unsigned integer overflow"},
	{`string(b"\xff")`, "program instantiation failed: invalid UTF-8 in bytes, cannot convert to string"},
	{`true ? 1 : int(1e100)`, "program instantiation failed: integer overflow"},
	{`[bool("maybe")].size()`, "program instantiation failed: type conversion error from 'string' to 'bool'"},
}

// TestPlanErrorsStayAtCompileTime checks that programs built on first
// evaluation change no compile error: a policy whose only errors come from
// planning the programs fails to compile, with upstream's exact texts, at
// admission time (Compile) and on create (Validate), in variables,
// matchConditions and mutations alike.
func TestPlanErrorsStayAtCompileTime(t *testing.T) {
	var s policySpec
	for i, f := range planFailures {
		s.variables = append(s.variables, [2]string{fmt.Sprintf("v%d", i), f[0]})
		s.conditions = append(s.conditions, [2]string{fmt.Sprintf("c%d", i), "dyn(" + f[0] + ") != null"})
	}
	s.variables = append(s.variables, [2]string{"fine", `int("1")`})
	s.ac = []string{`Object{spec: Object.spec{replicas: int("x")}}`}
	s.jp = []string{`[JSONPatch{op: "add", path: "/a", value: "x".find("(")}]`}
	p := s.build()

	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	compiled, err := c.Compile(p)
	if err != nil {
		t.Fatal(err)
	}
	upstream := upstreamErrors(t, p)
	var want []string
	for _, f := range planFailures {
		want = append(want, f[1])
	}
	want = append(want, "")
	for _, f := range planFailures {
		want = append(want, f[1])
	}
	want = append(want, "program instantiation failed: type conversion error from 'string' to 'int'",
		"program instantiation failed: error parsing regexp: missing closing ): `(`")
	got := compiled.Expressions()
	if len(got) != len(want) || len(upstream) != len(want) {
		t.Fatalf("%d expressions, upstream %d, want %d", len(got), len(upstream), len(want))
	}
	for i, e := range got {
		g := ""
		if e.Err != nil {
			g = e.Err.Error()
		}
		if g != upstream[i] || g != want[i] {
			t.Errorf("%s: error %q, upstream %q, want %q", e.Source, g, upstream[i], want[i])
		}
	}

	errs, err := c.Validate(p)
	if err != nil {
		t.Fatal(err)
	}
	var failing []string
	for _, w := range want {
		if w != "" {
			failing = append(failing, w)
		}
	}
	if len(errs) != len(failing) {
		t.Fatalf("Validate: %d errors, want %d: %v", len(errs), len(failing), errs)
	}
	for i, e := range errs {
		if !strings.HasSuffix(e.Error(), failing[i]) {
			t.Errorf("Validate: %v, want the detail %q", e, failing[i])
		}
	}

	// Evaluating reports the compile error, as before, and variables that
	// failed make the expressions using them fail as upstream's do.
	act := compiled.NewActivation(context.Background(), Input{})
	res, _, err := act.Eval(compiled.Variables[0], MutationBudget)
	if err != nil || res.Err == nil || res.Err.Error() != "compilation error: "+planFailures[0][1] {
		t.Errorf("evaluating a variable whose program failed: %v, %v", res.Err, err)
	}
}

// planCorpus is a range of expressions over the constructs and libraries of
// kube-apiserver's environments: the plan check must plan exactly those
// whose program builds.
var planCorpus = []string{
	`1`, `"a"`, `b"a"`, `1u`, `1.5`, `null`, `true`, `[1, 2]`, `{"a": 1}`, `[1, 2][0]`, `{"a": 1}["a"]`,
	`object.spec.replicas`, `has(object.spec)`, `object.?spec.orValue(1)`, `optional.of(1).or(optional.none())`,
	`[?optional.none(), 1]`, `{?"a": optional.of(1)}`, `object.metadata.labels.all(k, k != "")`,
	`object.metadata.labels.exists(k, v, v != "")`, `[1, 2].map(x, x * 2)`, `[1, 2].filter(x, x > 1)`,
	`[1, 2].transformList(i, x, x + i)`, `{"a": 1}.transformMap(k, v, v + 1)`, `1 in [1, 2, 3]`, `"a" in {"a": 1}`,
	`int("1")`, `int("x")`, `uint(-1)`, `uint(1)`, `double("1.5")`, `double("x")`, `string(1)`, `string(b"\xff")`,
	`bytes("a")`, `bool("true")`, `bool("x")`, `duration("1s")`, `timestamp("2024-01-01T00:00:00Z")`,
	`int(timestamp("2024-01-01T00:00:00Z"))`, `dyn(1)`, `type(1) == int`, `int(1e100)`, `int(double("nan"))`,
	`[int("x")]`, `{"a": int("x")}`, `{int("x"): 1}`, `int(string(int("1")))`, `int(object.x)`, `int(variables.a)`,
	`"abc".matches("b")`, `"abc".find("b")`, `"abc".find("[")`, `"abc".findAll("b")`, `"abc".findAll("(", 1)`,
	`"abc".find(object.pattern)`, `"abc".findAll(string(1) + "(")`, `"%d".format([1])`, `"a".replace("a", "b")`,
	`"a,b".split(",")`, `"a".lowerAscii()`, `"  a ".trim()`, `"abc".indexOf("b")`, `"abc".substring(1)`,
	`["a"].join(",")`, `"a".charAt(0)`, `strings.quote("a")`, `[1, 2].sum()`, `[1, 2].isSorted()`, `[3, 1].min()`,
	`[1, 2].indexOf(1)`, `[1, [2]].flatten()`, `[1, 2].slice(0, 1)`, `lists.range(3)`, `[2, 1].sort()`,
	`[1, 2].distinct()`, `[1].reverse()`, `sets.contains([1], [1])`, `sets.intersects([1], [2])`,
	`quantity("1Gi").asInteger()`, `isQuantity("x")`, `quantity("x")`, `url("https://x/y").getHost()`, `isURL("x")`,
	`ip("10.0.0.1").family()`, `isIP("x")`, `ip("x")`, `cidr("10.0.0.0/8").containsIP("10.0.0.1")`, `cidr("x")`,
	`semver("1.2.3").major()`, `isSemver("x")`, `semver("x")`, `math.greatest(1, 2)`, `math.abs(-1)`,
	`base64.encode(b"a")`, `authorizer.group("apps").resource("deployments").check("get").allowed()`,
	`authorizer.requestResource.check("get").reason()`, `request.operation == "CREATE"`,
	`namespaceObject.metadata.name`, `oldObject == null`, `cel.bind(x, 1, x + 1)`,
	`format.dns1123Label().validate("a")`, `format.named("dns1123Label").hasValue()`,
	`"a".matches("a") && "b".find("(") == ""`, `true ? 1 : int("x")`, `false || bool("x")`,
	`Object{spec: Object.spec{replicas: 1}}`, `Object{spec: Object.spec{replicas: int("x")}}`,
	`[JSONPatch{op: "add", path: "/a/" + jsonpatch.escapeKey("b/c"), value: 1}]`,
	`[JSONPatch{op: "add", path: "/a", value: "x".find("(")}]`, `object.spec.containers[0].name`,
	`object.metadata.?labels[?"a"]`, `1 + 2 * 3 - 4 / 5 % 6`, `-1`, `!true`, `1 < 2u`, `1.0 == 1`, `size("a")`,
	`"a" + "b"`, `b"a" + b"b"`, `[1] + [2]`, `duration("1s") + duration("2s")`, `timestamp("2024-01-01T00:00:00Z").getFullYear()`,
}

// TestPlanCheckAgreesWithProgram compiles the corpus in every environment
// a policy compiles in (admission and API validation, with and without
// params and patch types) and checks that the plan check plans exactly the
// expressions env.Program builds a program for. That it never plans one
// whose program fails is what keeps compile errors unchanged; that it plans
// the others is what keeps compiling cheap.
func TestPlanCheckAgreesWithProgram(t *testing.T) {
	base, err := loadBaseEnvs()
	if err != nil {
		t.Fatal(err)
	}
	failures := 0
	for k := range base.envs {
		for _, mode := range []environment.Type{environment.StoredExpressions, environment.NewExpressions} {
			vars := []varDecl{{name: "a", typ: declTypeOf(cel.IntType)}}
			pe, err := base.build(k, mode, vars)
			if err != nil {
				t.Fatal(err)
			}
			if pe.check == nil {
				t.Fatalf("%+v %v: no plan check", k, mode)
			}
			for _, src := range planCorpus {
				ast, iss := pe.env.Compile(src)
				if iss.Err() != nil {
					continue
				}
				_, progErr := pe.env.Program(ast, programOptions()...)
				plans := pe.check.plans(pe.env, ast)
				if plans && progErr != nil {
					t.Errorf("%+v %v: %s: planned, but env.Program fails: %v", k, mode, src, progErr)
				}
				if !plans && progErr == nil {
					t.Errorf("%+v %v: %s: not planned, but env.Program builds it", k, mode, src)
				}
				if progErr != nil {
					failures++
				}
			}
		}
	}
	if failures == 0 {
		t.Error("no expression of the corpus failed env.Program: the corpus tests nothing")
	}
}

// TestProgramsBuiltOnFirstEvaluation checks that compiling builds no
// program for an expression that plans, that the first evaluation builds it
// (once, whatever the number of concurrent evaluations) and that the results
// are those of a program built eagerly.
func TestProgramsBuiltOnFirstEvaluation(t *testing.T) {
	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	compiled, err := c.Compile(policySpec{
		variables:  [][2]string{{"a", `object.spec.replicas + int("1")`}, {"b", `"abc".find("b+")`}},
		conditions: [][2]string{{"c", `variables.a > 2 && variables.b == "b"`}},
		ac:         []string{`Object{spec: Object.spec{replicas: variables.a}}`},
	}.build())
	if err != nil || len(compiled.Errors()) > 0 {
		t.Fatal(err, compiled.Errors())
	}
	for _, e := range compiled.Expressions() {
		if e.prog == nil || e.prog.prog != nil {
			t.Fatalf("%s: program built at compile time", e.Source)
		}
	}
	in := Input{Object: map[string]any{"spec": map[string]any{"replicas": int64(2)}}}
	var wg sync.WaitGroup
	results := make([]Result, 8)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			act := compiled.NewActivation(context.Background(), in)
			res, _, err := act.Eval(compiled.MatchConditions[0], MatchConditionsBudget)
			if err != nil {
				t.Error(err)
			}
			results[i] = res
		}()
	}
	wg.Wait()
	for _, res := range results {
		if res.Err != nil || res.Value == nil || res.Value.Value() != true || res.Cost != results[0].Cost {
			t.Errorf("result %v (cost %d, err %v), first cost %d", res.Value, res.Cost, res.Err, results[0].Cost)
		}
	}
	for _, e := range compiled.Expressions()[:3] {
		if e.prog.prog == nil {
			t.Errorf("%s: no program after evaluation", e.Source)
		}
	}
	// The same policy with its programs built as kube-apiserver builds them.
	for _, e := range compiled.Expressions() {
		prog, err := e.env.Program(e.ast, programOptions()...)
		if err != nil {
			t.Fatal(err)
		}
		eager := &Expression{Kind: e.Kind, Name: e.Name, Source: e.Source, ast: e.ast, env: e.env, prog: &lazyProgram{prog: prog}}
		lazy := compiled.NewActivation(context.Background(), in)
		want, _, _ := lazy.Eval(e, MutationBudget)
		got, _, _ := compiled.NewActivation(context.Background(), in).Eval(eager, MutationBudget)
		// (sameValue: an ApplyConfiguration's Object is objectOnce's when
		// lazy, cel-go's ObjectVal when eager.)
		same := got.Err == nil && want.Err == nil && got.Value != nil && want.Value != nil && sameValue(want.Value, got.Value)
		if !same || got.Cost != want.Cost {
			t.Errorf("%s: eager %v %v %d, lazy %v %v %d", e.Source, got.Value, got.Err, got.Cost, want.Value, want.Err, want.Cost)
		}
	}
}
