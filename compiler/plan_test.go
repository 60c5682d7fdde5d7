package compiler

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	celtypes "github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/mutation"
	"k8s.io/apiserver/pkg/cel/mutation/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/mutatis-dev/mutatis/internal/celobject"
)

// unplanned returns p with every expression's program built without
// planOnce: cel-go's own plan, the reference planOnce is held to.
func unplanned(t testing.TB, p *Policy) *Policy {
	t.Helper()
	for _, list := range [][]*Expression{p.Variables, p.MatchConditions, p.Mutations} {
		for _, e := range list {
			if e.Err != nil || e.prog == nil {
				continue
			}
			prog, err := e.env.Program(e.ast, cel.InterruptCheckFrequency(celconfig.CheckFrequency))
			if err != nil {
				t.Fatalf("%s: %v", e.Source, err)
			}
			e.prog = &lazyProgram{prog: prog}
		}
	}
	return p
}

// twoCompilers returns two Compilers: policies compiled by each share no
// expression and no program.
func twoCompilers(t testing.TB) (*Compiler, *Compiler) {
	t.Helper()
	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	refC, err := New()
	if err != nil {
		t.Fatal(err)
	}
	return c, refC
}

// sameResults evaluates every expression of p and of ref (the same policy
// compiled apart) on in, each list in its own activations, in policy
// order, and reports any difference of value, type, error, cost or
// remaining budget. It returns how many values and errors it compared.
func sameResults(t testing.TB, where string, p, ref *Policy, in Input) (vals, errs int) {
	t.Helper()
	lists := [][2][]*Expression{{p.Variables, ref.Variables}, {p.MatchConditions, ref.MatchConditions}, {p.Mutations, ref.Mutations}}
	for _, l := range lists {
		act, refAct := p.NewActivation(context.Background(), in), ref.NewActivation(context.Background(), in)
		budget, refBudget := int64(celconfig.RuntimeCELCostBudget), int64(celconfig.RuntimeCELCostBudget)
		for i, e := range l[0] {
			at := fmt.Sprintf("%s: %s", where, strings.TrimSpace(e.Source))
			got, left, err := act.Eval(e, budget)
			want, refLeft, refErr := refAct.Eval(l[1][i], refBudget)
			budget, refBudget = left, refLeft
			if fmt.Sprint(err) != fmt.Sprint(refErr) || left != refLeft {
				t.Errorf("%s: error %v, budget %d; cel-go's plan: %v, %d", at, err, left, refErr, refLeft)
				continue
			}
			if got.Cost != want.Cost {
				t.Errorf("%s: cost %d, cel-go's plan %d", at, got.Cost, want.Cost)
			}
			if fmt.Sprint(got.Err) != fmt.Sprint(want.Err) {
				t.Errorf("%s: %v, cel-go's plan %v", at, got.Err, want.Err)
				continue
			}
			if err != nil {
				break
			}
			if got.Err != nil {
				errs++
				continue
			}
			vals++
			if !sameValue(got.Value, want.Value) {
				t.Errorf("%s: %v (%s), cel-go's plan %v (%s)", at, got.Value, got.Value.Type().TypeName(), want.Value, want.Value.Type().TypeName())
			}
		}
	}
	return vals, errs
}

// sameValue reports whether a and b are the same CEL value of the same
// type, through Object values (whose Equal compares their Go fields with
// reflect.DeepEqual, false for any list inside), JSONPatch values, lists,
// maps and optionals.
func sameValue(a, b ref.Val) bool {
	if a.Type().TypeName() != b.Type().TypeName() {
		return false
	}
	switch x := a.(type) {
	case *celobject.Object:
		// objectOnce's value: the ObjectVal cel-go built.
		y, ok := b.(*dynamic.ObjectVal)
		return ok && x.IsZeroValue() == y.IsZeroValue() && sameValue(x.Upstream(), y)
	case *dynamic.ObjectVal:
		// The same type and fields, compared as CEL values (a list in a
		// field is never reflect.DeepEqual to another: it holds a
		// function), and the same native conversion.
		y, ok := b.(*dynamic.ObjectVal)
		if !ok || celobject.TypeOf(x).TypeName() != celobject.TypeOf(y).TypeName() {
			return false
		}
		fx, fy := celobject.Fields(x), celobject.Fields(y)
		if len(fx) != len(fy) {
			return false
		}
		for k, vy := range fy {
			vx, found := fx[k]
			if !found || !sameValue(vx, vy) {
				return false
			}
		}
		nx, errX := x.ConvertToNative(reflect.TypeFor[map[string]any]())
		ny, errY := y.ConvertToNative(reflect.TypeFor[map[string]any]())
		return fmt.Sprint(errX) == fmt.Sprint(errY) && (errX != nil || len(nx.(map[string]any)) == len(ny.(map[string]any)))
	case *mutation.JSONPatchVal:
		y, ok := b.(*mutation.JSONPatchVal)
		if !ok || x.Op != y.Op || x.From != y.From || x.Path != y.Path || (x.Val == nil) != (y.Val == nil) {
			return false
		}
		return x.Val == nil || sameValue(x.Val, y.Val)
	case *celtypes.Optional:
		y, ok := b.(*celtypes.Optional)
		if !ok || x.HasValue() != y.HasValue() {
			return false
		}
		return !x.HasValue() || sameValue(x.GetValue(), y.GetValue())
	case traits.Lister:
		y, ok := b.(traits.Lister)
		if !ok || x.Size() != y.Size() {
			return false
		}
		for i := celtypes.Int(0); i < x.Size().(celtypes.Int); i++ {
			if !sameValue(x.Get(i), y.Get(i)) {
				return false
			}
		}
		return true
	case traits.Mapper:
		y, ok := b.(traits.Mapper)
		if !ok || x.Size() != y.Size() {
			return false
		}
		for it := x.Iterator(); it.HasNext() == celtypes.True; {
			k := it.Next()
			yv, found := y.Find(k)
			if !found || !sameValue(x.Get(k), yv) {
				return false
			}
		}
		return true
	}
	return a.Equal(b) == celtypes.True
}

// yamlDocs returns the documents of the YAML files matching pattern (from
// the repository root) as unstructured maps.
func yamlDocs(t testing.TB, pattern string) []map[string]any {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", pattern))
	if err != nil || len(files) == 0 {
		t.Fatalf("no files match %s: %v", pattern, err)
	}
	var docs []map[string]any
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range bytes.Split(data, []byte("\n---")) {
			j, err := yaml.YAMLToJSON(doc)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if len(bytes.TrimSpace(j)) == 0 || string(bytes.TrimSpace(j)) == "null" {
				continue
			}
			var u unstructured.Unstructured
			if err := u.UnmarshalJSON(j); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			docs = append(docs, u.Object)
		}
	}
	return docs
}

// TestPlanOnceAgrees holds planOnce to cel-go's own plan over real
// policies: every variable, matchCondition and mutation of the example
// and load-test policies, evaluated on the example and load-test objects
// (created, updated against themselves and against another object, with
// and without params), gives the same value of the same type or the same
// error, at the same cost, leaving the same budget.
// fixtures are the MutatingAdmissionPolicies, objects and param
// ConfigMaps of the example and load-test policies.
func fixtures(t testing.TB) (policies []*admissionregistrationv1.MutatingAdmissionPolicy, objects, params []map[string]any) {
	t.Helper()
	for _, pattern := range []string{"test/load/testdata/policies/*.yaml", "examples/*/*.yaml", "examples/*/testdata/*.yaml", "test/load/testdata/pod.yaml"} {
		for _, doc := range yamlDocs(t, pattern) {
			switch doc["kind"] {
			case "MutatingAdmissionPolicy":
				j, _ := json.Marshal(doc)
				p := &admissionregistrationv1.MutatingAdmissionPolicy{}
				if err := json.Unmarshal(j, p); err != nil {
					t.Fatal(err)
				}
				policies = append(policies, p)
			case "ConfigMap":
				params = append(params, doc)
			case nil, "MutatingAdmissionPolicyBinding", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "MutatingWebhookConfiguration":
			default:
				if doc["apiVersion"] != nil {
					objects = append(objects, doc)
				}
			}
		}
	}
	if len(policies) < 20 || len(objects) < 5 || len(params) == 0 {
		t.Fatalf("%d policies, %d objects, %d params: the fixtures are meant to hold more", len(policies), len(objects), len(params))
	}
	return policies, objects, params
}

func TestPlanOnceAgrees(t *testing.T) {
	policies, objects, params := fixtures(t)
	c, refC := twoCompilers(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "payments", Labels: map[string]string{"team": "shop", "pod-security.kubernetes.io/enforce": "restricted"}}}
	var vals, errs int
	for _, mp := range policies {
		p, err := c.Compile(mp)
		if err != nil {
			t.Fatalf("%s: %v", mp.Name, err)
		}
		ref, err := refC.Compile(mp)
		if err != nil {
			t.Fatalf("%s: %v", mp.Name, err)
		}
		ref = unplanned(t, ref)
		for i, obj := range objects {
			other := objects[(i+1)%len(objects)]
			for _, op := range []admissionv1.Operation{admissionv1.Create, admissionv1.Update} {
				req := &admissionv1.AdmissionRequest{UID: "u", Operation: op, Namespace: "payments", Name: "n",
					Kind:     metav1.GroupVersionKind{Version: "v1", Kind: fmt.Sprint(obj["kind"])},
					Resource: metav1.GroupVersionResource{Version: "v1", Resource: strings.ToLower(fmt.Sprint(obj["kind"])) + "s"},
					UserInfo: authenticationv1.UserInfo{Username: "alice", Groups: []string{"dev"}}}
				for _, old := range []map[string]any{nil, obj, other} {
					if (op == admissionv1.Create) != (old == nil) {
						continue
					}
					for j, prm := range append([]map[string]any{nil}, params...) {
						in := Input{Object: obj, OldObject: old, Params: prm, Request: req, Namespace: ns}
						v, e := sameResults(t, fmt.Sprintf("%s on %s/%d (%s, params %d)", mp.Name, obj["kind"], i, op, j), p, ref, in)
						vals, errs = vals+v, errs+e
					}
				}
			}
		}
	}
	t.Logf("%d policies, %d objects, %d params: %d values and %d errors compared", len(policies), len(objects), len(params), vals, errs)
	if vals < 1000 {
		t.Errorf("only %d values compared", vals)
	}
}

// FuzzPlanOnceAgrees holds planOnce to cel-go's own plan on any
// expression that compiles as a variable, a matchCondition and a mutation:
// the same value or error at the same cost. Every map of the object has
// one key: cel-go iterates a Go map in Go's random order, so the cost of a
// comprehension that stops early over a map of more would differ from one
// evaluation to the next whatever the plan.
func FuzzPlanOnceAgrees(f *testing.F) {
	for _, s := range []string{
		`object.spec.items[0].name + "-x"`,
		`size(object.spec.items) == 6 && object.spec.items[0].name.startsWith("a")`,
		`Object{spec: Object.spec{containers: object.spec.items.filter(i, has(i.name)).map(i, Object.spec.containers{name: i.name + "1"})}}`,
		`[JSONPatch{op: "add", path: "/metadata/labels/a", value: "b"}]`,
		`object.spec.items.filter(i, has(i.image) && i.image.matches("^ngi.*")).map(i, i.image)`,
		`object.spec.items.exists(i, has(i.name) && i.name.contains("b")) ? 1 : -object.spec.items[3].n`,
		`!has(object.spec.x) || object.spec.items[5].tags.all(t, t in ["a", "b"])`,
		`object.?spec.?items[3].?n.orValue(0) > 2 && string(object.spec.items[4].r) != "1"`,
		`int("3") + size(object.spec.items[0].name) * 2 - object.spec.items[3].n % 2`,
		`object.spec.items[2].image.split("g").join("G").lowerAscii() == "nginx"`,
		`Object{metadata: Object.metadata{labels: {"x": object.spec.items[1].name}}}`,
		// Objects a map appends, list literals under an Object (appendsOnly,
		// listOnce).
		`Object{spec: Object.spec{c: object.spec.items.map(i, has(i.name), Object.spec.c{n: [i.name, dyn(1)], e: [Object.spec.c.e{v: i}]})}}`,
		`Object{spec: Object.spec{c: [object.spec.items[0], object.spec.items[9]], d: object.spec.items.map(i, [i]).map(l, Object.spec.d{x: l})}}`,
		`object.spec.exists(k, k == "items") && object.spec.items.map(i, i).size() > 1`,
		// Maps of the object selected, tested, compared and measured on the
		// way (the cost observer's view of them, present.go).
		`has(object.spec) && has(object.spec.items[0].name) && !has(object.spec.items[1].x)`,
		`object.spec == oldObject.spec && object.spec.items[0] != object.spec.items[1]`,
		`size(object.spec) + size(object.spec.items[0]) + size(object.?spec.orValue({}))`,
		`object.spec.items[0] in [object.spec.items[1], object.spec.items[0]] && "name" in object.spec.items[0]`,
		`(size(object.spec.items) > 2 ? object.spec.items[0] : object.spec.items[1]).name`,
		`object.?spec.?items[?0].?name.orValue("") + object.spec.items.map(i, i.?name.orValue("-")).join("")`,
		`object.spec.items[0][object.spec.items.map(i, "name")[0]] + string(object.spec[?"items"].orValue([]).size())`,
		`{"k": object.spec.items[2]}.k.image + string(object.spec.items[3]) + object.spec.items[5].tags[1]`,
		`object.spec.items.all(i, i.exists(k, k != "")) && object.spec.items[4].exists(k, k == "r")`,
		// JSONPatch constructions built straight (construct.go).
		`object.spec.items.map(i, JSONPatch{op: dyn(i.?name.orValue("add")), path: "/" + string(size(i)), value: i})`,
		`[JSONPatch{op: "copy", from: object.spec.items[0].name, path: dyn(object.spec.items[3].n)}]`,
		// A map of the object hashed: a set membership test (Optimize), a
		// map literal's key (mapView is a pointer, as cel-go's map is).
		`object.spec.items[0] in [0, 1] || {dyn(object.spec.items[0]): 1}.size() == 1`,
		`{dyn(object.spec): 1}.size() + size([object.spec].filter(s, s in ["a"]))`,
		// Optional selections of the object's maps and lists, as views
		// (resolveOptional, present.go).
		`"name" in object.spec.?items[0].orValue({}) && object.spec.?items.orValue([]).size() == 6`,
		`object.spec.items.filter(i, "tags" in i).map(i, i.?tags[?1].orValue("z") + i.?tags.orValue([])[0])`,
		`object.?spec.?items[?7].orValue(object.spec.?items[1].?name) == object.spec.?nope.?x`,
		// The lists map and filter append, in one allocation (steplist.go).
		`object.spec.items.map(i, [i]).map(l, l[0]) == object.spec.items && [1, 2].map(x, 1) == [1, 1]`,
		`object.spec.items.filter(i, has(i.n)).map(i, i.n * 2) + object.spec.items.map(i, i.name)`,
		`object.spec.items.transformList(k, i, k > 1, i).map(i, object.spec.items.filter(j, j == i).size())`,
		// An ApplyConfiguration's Objects as celobject.Objects (objectOnce,
		// construct.go): nested, in lists, maps and branches, optional
		// fields present, absent and not optional, a field that fails.
		`Object{spec: Object.spec{items: [Object.spec.items{n: object.spec.items[3].n}], m: {"k": Object.spec.m{}}}}`,
		`size(object.spec.items) > 2 ? Object{?spec: optional.none(), metadata: Object.metadata{?labels: optional.of({"a": "b"})}} : Object{}`,
		`Object{spec: Object.spec{?x: object.?spec.?items[?0].?name, ?y: dyn(1), z: [[Object.spec.z{}]]}}`,
		`Object{spec: Object.spec{a: object.spec.items[9], b: Object.wrong{}, c: dyn(Object.spec.c{d: null})}}`,
		// A JSON patch's Object values as celobject.Objects (objectOnce,
		// patchValuesOf): in a list, a map macro and a conditional, nested,
		// in lists and maps, named wrong, a field that fails, left to cel-go.
		`[JSONPatch{op: "add", path: "/spec", value: Object{spec: Object.spec{items: [Object.spec.items{n: object.spec.items[3].n}]}}}]`,
		`object.spec.items.map(i, JSONPatch{op: "add", path: "/x", value: Object.x{a: i, b: [Object.x.b{}], c: {"k": Object.x.c{}}}})`,
		`size(object.spec.items) > 2 ? [JSONPatch{op: "replace", path: "/a", value: [Object{a: 1}, {"k": Object{b: null}}]}] : [JSONPatch{op: "test", path: "/a", value: Object.x{y: Object.wrong{}}}]`,
		`[JSONPatch{op: "add", path: "/a", value: Object{a: 1 / 0}}, JSONPatch{op: "add", path: "/b", value: dyn(Object{b: [[Object.b{}]]})}]`,
	} {
		f.Add(s)
	}
	c, refC := twoCompilers(f)
	obj := map[string]any{"spec": map[string]any{"items": []any{
		map[string]any{"name": "a"}, map[string]any{"name": "b"}, map[string]any{"image": "nginx"},
		map[string]any{"n": int64(3)}, map[string]any{"r": 1.5}, map[string]any{"tags": []any{"a", "b"}},
	}}}
	f.Fuzz(func(t *testing.T, expr string) {
		if len(expr) > 400 {
			return
		}
		mp := policySpec{variables: [][2]string{{"v", expr}}, conditions: [][2]string{{"c", expr}}, ac: []string{expr}, jp: []string{expr}}.build()
		p, err := c.Compile(mp)
		if err != nil {
			return
		}
		ref, err := refC.Compile(mp)
		if err != nil {
			t.Fatal(err)
		}
		ref = unplanned(t, ref)
		in := Input{Object: obj, OldObject: obj}
		sameResults(t, "fuzz", p, ref, in)
		// The JSONPatch reader's reading of the JSON patch mutation.
		if e := p.Mutations[1]; e.Err == nil {
			act, refAct := p.NewActivation(context.Background(), in), ref.NewActivation(context.Background(), in)
			got, _, err := act.Eval(e, MutationBudget)
			want, _, refErr := refAct.Eval(ref.Mutations[1], MutationBudget)
			if err == nil && refErr == nil && got.Err == nil && want.Err == nil {
				samePatchReading(t, expr, got.Value, want.Value)
			}
			act.Release()
			refAct.Release()
		}
	})
}
