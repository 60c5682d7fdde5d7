package applyconfig

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	apiextensionshelpers "k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"

	"github.com/mutatis-dev/mutatis/internal/valuetest"
)

// defaultsCRD is a CRD of the defaulting tests with the answer
// defaultsKeepValid must give for its first version.
type defaultsCRD struct {
	name string
	crd  *unstructured.Unstructured
	keep bool
	// specs are objects' specs that defaulting changes (perturbed, with
	// nulls, beside the random objects).
	specs []string
}

// defaultsCRDs are CRDs with defaults at every kind of place: the gizmos
// of scheme's tests and the benchmark, the widgets, keyed lists and sets,
// and defaults that structured-merge-diff refuses at a property, under
// additionalProperties, under items, in a keyed list's item and in a
// default's own default (schemas kube-apiserver would refuse, which
// mutatis loads: the check, not the CRD's validation, must catch them).
func defaultsCRDs(t testing.TB) []defaultsCRD {
	crd := func(kind, props string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: fromYAML(t, fmt.Sprintf(`
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: %[2]ss.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: %[2]ss, singular: %[2]s, kind: %[1]s}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
%[3]s`, kind, lower(kind), props))}
	}
	return []defaultsCRD{
		{"gizmos", loadCRD(t, "../scheme/testdata/crd/gizmos.yaml"), true, []string{
			`{ports: [{name: a, port: 1}, {name: b, options: {}}, null], routes: {r: {backend: {service: s}}, q: null}, counters: {a: null, b: 2}, words: [a, null], matrix: [[{w: x}, null]], nullableObject: null, extra: {inner: {}}, template: {apiVersion: v1, kind: ConfigMap}}`,
			`{strategy: null, withDefault: null, nullableWithDefault: null}`,
		}},
		{"widgets", loadCRD(t, "../scheme/testdata/crd/widgets.yaml"), true, []string{`{mode: a, nested: {level: null}, items: [{key: k}, {}]}`}},
		{"keyed", crd("Keyed", `
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name, protocol]
                items:
                  type: object
                  properties:
                    name: {type: string}
                    protocol: {type: string, default: TCP}
                    opts:
                      type: object
                      default: {}
                      properties:
                        n: {type: integer, default: 3}
              tags:
                type: array
                x-kubernetes-list-type: set
                items: {type: string, default: none}
              labels:
                type: object
                additionalProperties: {type: string, default: empty}
              nested:
                type: object
                additionalProperties:
                  type: object
                  default: {}
                  properties:
                    x: {type: integer, default: 1}
                    y:
                      type: array
                      default: [{}]
                      items:
                        type: object
                        properties:
                          z: {type: boolean, default: true}
              free:
                type: object
                x-kubernetes-preserve-unknown-fields: true
                properties:
                  level: {type: integer, default: 1}
              either:
                x-kubernetes-int-or-string: true
                default: 80
`), true, []string{
			`{ports: [{name: a}, {name: a, protocol: UDP}, {name: b, opts: null}], tags: [a, b], labels: {a: null, b: c}, nested: {a: null, b: {y: [{}, null]}}, free: {other: 1}}`,
		}},
		{"badproperty", crd("BadProperty", `
              count: {type: integer, default: "x"}
`), false, []string{`{}`}},
		{"badadditional", crd("BadAdditional", `
              labels:
                type: object
                additionalProperties: {type: string, default: 1}
`), false, []string{`{labels: {a: null}}`}},
		{"baditems", crd("BadItems", `
              words:
                type: array
                items: {type: string, default: true}
`), false, []string{`{words: [a, null]}`}},
		{"badkey", crd("BadKey", `
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  properties:
                    name: {type: string}
                    port: {type: integer, default: "http"}
`), false, []string{`{ports: [{name: a}]}`}},
		{"baddeep", crd("BadDeep", `
              outer:
                type: object
                default: {}
                properties:
                  inner:
                    type: object
                    properties:
                      n: {type: integer, default: "two"}
                  s: {type: string, default: 3}
`), false, []string{`{outer: {inner: {}}}`}},
	}
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// structuralOf is the structural schema, defaults pruned, of version v of
// crd, as scheme.CustomResources builds the schema it defaults with.
func structuralOf(t testing.TB, crd *apiextensionsv1.CustomResourceDefinition, v string) *structuralschema.Structural {
	t.Helper()
	val, err := apiextensionshelpers.GetSchemaForVersion(crd, v)
	if err != nil || val == nil {
		t.Fatalf("schema of %s %s: %v", crd.Name, v, err)
	}
	internal := &apiextensionsinternal.CustomResourceValidation{}
	if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(val, internal, nil); err != nil {
		t.Fatal(err)
	}
	s, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
	if err != nil {
		t.Fatal(err)
	}
	if err := structuraldefaulting.PruneDefaults(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// defaultsKind is one CRD's first version: its merger, schema and a
// registry holding it.
func defaultsKind(t testing.TB, c defaultsCRD) (*Merger, *structuralschema.Structural, schema.GroupVersionKind) {
	t.Helper()
	reg := NewSchemas()
	if err := reg.AddCRD(c.crd); err != nil {
		t.Fatal(err)
	}
	crd, err := toCRD(c.crd)
	if err != nil {
		t.Fatal(err)
	}
	gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: crd.Spec.Versions[0].Name, Kind: crd.Spec.Names.Kind}
	m, err := reg.Merger(gvk)
	if err != nil {
		t.Fatal(err)
	}
	if m.root == nil {
		t.Fatalf("%s: no root type", c.name)
	}
	return m, structuralOf(t, crd, gvk.Version), gvk
}

// nulls returns a copy of v with some values (map values, list items)
// made null.
func nulls(rng *rand.Rand, v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for _, k := range slices.Sorted(maps.Keys(x)) {
			if rng.IntN(8) == 0 {
				out[k] = nil
			} else {
				out[k] = nulls(rng, x[k])
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, item := range x {
			if rng.IntN(8) == 0 {
				out[i] = nil
			} else {
				out[i] = nulls(rng, item)
			}
		}
		return out
	}
	return v
}

// TestDefaultsKeepValid holds defaultsKeepValid to structured-merge-diff:
// random objects of each CRD's kind (generated from its structured-merge-
// diff schema, with nulls, perturbed) that validate as live objects
// (duplicates allowed) are defaulted with upstream's structural
// defaulting; where defaultsKeepValid answers true every defaulted object
// validates, and for the CRDs whose defaults structured-merge-diff
// refuses it answers false and some valid object does not validate once
// defaulted (the answer matters).
func TestDefaultsKeepValid(t *testing.T) {
	n := valuetest.Sweep(3000, 400)
	for _, c := range defaultsCRDs(t) {
		t.Run(c.name, func(t *testing.T) {
			m, s, gvk := defaultsKind(t, c)
			keep := m.root.defaultsKeepValid(s)
			if keep != c.keep {
				t.Errorf("defaultsKeepValid = %v, want %v", keep, c.keep)
			}
			rng := rand.New(rand.NewPCG(29, uint64(len(c.name))))
			valid, changed, broken := 0, 0, 0
			for i := range n {
				obj := genObject(rng, m.root.s, m.root.tr)
				change := rng.IntN(3)
				if i%4 == 0 {
					// A fixture: as it is the first time, then perturbed.
					obj = map[string]any{"metadata": map[string]any{"name": "x"}, "spec": fromYAML(t, c.specs[i/4%len(c.specs)])}
					if i < 4*len(c.specs) {
						change = 2
					}
				}
				switch change {
				case 0:
					obj = nulls(rng, obj).(map[string]any)
				case 1:
					obj = perturb(rng, obj).(map[string]any)
				}
				u := &unstructured.Unstructured{Object: obj}
				u.SetGroupVersionKind(gvk)
				if _, err := m.tc.ObjectToTyped(u, typed.AllowDuplicates); err != nil {
					continue
				}
				valid++
				d := runtime.DeepCopyJSON(obj)
				structuraldefaulting.Default(d, s)
				if reflect.DeepEqual(d, obj) {
					continue
				}
				changed++
				if _, err := m.tc.ObjectToTyped(&unstructured.Unstructured{Object: d}, typed.AllowDuplicates); err != nil {
					broken++
					if keep {
						t.Fatalf("defaulting made a valid object invalid, where defaultsKeepValid answers true (%v):\n%#v\n%#v", err, obj, d)
					}
				}
			}
			t.Logf("%d valid objects, %d changed by defaulting, %d of them invalid", valid, changed, broken)
			if c.keep && changed < n/20 {
				t.Errorf("only %d of %d objects were changed by defaulting", changed, n)
			}
			if !c.keep && broken == 0 {
				t.Error("no valid object was made invalid by defaulting: the test cannot tell a wrong answer")
			}
		})
	}
}

// TestDefaultedMergesAreMerges chains merges the way an admission does: a
// merge into a custom resource, its result defaulted (upstream's
// structural defaulting), Defaulted, and a second merge into the
// defaulted object with that as prev, which does not validate it again:
// the same result or error as the second merge without prev, and as
// upstream's merge, for random patches of every defaulting CRD. Defaulted
// refuses what it cannot vouch for.
func TestDefaultedMergesAreMerges(t *testing.T) {
	n := valuetest.Sweep(1500, 200)
	for _, c := range defaultsCRDs(t) {
		t.Run(c.name, func(t *testing.T) {
			m, s, gvk := defaultsKind(t, c)
			rng := rand.New(rand.NewPCG(41, uint64(len(c.name))))
			chained, succeeded := 0, 0
			for range n {
				live := genObject(rng, m.root.s, m.root.tr)
				(&unstructured.Unstructured{Object: live}).SetGroupVersionKind(gvk)
				first, second := genObject(rng, m.root.s, m.root.tr), genObject(rng, m.root.s, m.root.tr)
				if rng.IntN(2) == 0 {
					// A patch that shares most paths with the object.
					second = perturb(rng, live).(map[string]any)
					delete(second, "apiVersion")
				}
				m1, err := m.Merge(&unstructured.Unstructured{Object: runtime.DeepCopyJSON(live)}, first, nil)
				if err != nil {
					continue
				}
				out := runtime.DeepCopyJSON(m1.Object.Object)
				structuraldefaulting.Default(out, s)
				d, ok := m.Defaulted(m1, out, s)
				if ok != c.keep {
					t.Fatalf("Defaulted: ok = %v, want %v", ok, c.keep)
				}
				if !ok {
					continue
				}
				chained++
				snapshot := runtime.DeepCopyJSON(out)
				got, err := m.Merge(&unstructured.Unstructured{Object: out}, runtime.DeepCopyJSON(second), d)
				want, wantErr := m.Merge(&unstructured.Unstructured{Object: runtime.DeepCopyJSON(snapshot)}, runtime.DeepCopyJSON(second), nil)
				if !reflect.DeepEqual(out, snapshot) {
					t.Fatal("the chained merge modified its live object")
				}
				if (err == nil) != (wantErr == nil) || err != nil && !sameError(err.Error(), wantErr.Error()) && !patchErrors(err, wantErr) {
					t.Fatalf("error mismatch:\n chained: %v\n   alone: %v", err, wantErr)
				}
				if err == nil {
					succeeded++
				}
				if err == nil && !reflect.DeepEqual(got.Object.Object, want.Object.Object) {
					t.Fatalf("result mismatch:\n chained: %#v\n   alone: %#v", got.Object.Object, want.Object.Object)
				}
				up, upErr := upstreamMerge(m.tc, &unstructured.Unstructured{Object: runtime.DeepCopyJSON(snapshot)}, runtime.DeepCopyJSON(second))
				if (err == nil) != (upErr == nil) || err == nil && !reflect.DeepEqual(got.Object.Object, up.Object) {
					t.Fatalf("upstream differs:\n chained: %v %#v\n upstream: %v %#v", err, got, upErr, up)
				}
			}
			if c.keep && (chained < n/4 || succeeded < n/10) {
				t.Errorf("only %d of %d merges chained, %d of them without error", chained, n, succeeded)
			}
			t.Logf("%d chained merges, %d without error", chained, succeeded)
		})
	}

	t.Run("refused", func(t *testing.T) {
		c := defaultsCRDs(t)[0]
		m, s, gvk := defaultsKind(t, c)
		live := map[string]any{"metadata": map[string]any{"name": "g"}, "spec": map[string]any{}}
		(&unstructured.Unstructured{Object: live}).SetGroupVersionKind(gvk)
		m1, err := m.Merge(&unstructured.Unstructured{Object: live}, map[string]any{"spec": map[string]any{"replicas": int64(2)}}, nil)
		if err != nil || !m1.valid {
			t.Fatalf("merge: %v (valid %v)", err, m1 != nil && m1.valid)
		}
		out := runtime.DeepCopyJSON(m1.Object.Object)
		structuraldefaulting.Default(out, s)
		if _, ok := m.Defaulted(m1, out, s); !ok {
			t.Fatal("Defaulted refuses a valid merge result")
		}
		other, _, _ := defaultsKind(t, c) // another converter
		invalid := &Merged{Object: m1.Object, tc: m1.tc}
		otherKind := runtime.DeepCopyJSON(out)
		otherKind["kind"] = "Other"
		for name, try := range map[string]func() bool{
			"another converter":  func() bool { _, ok := other.Defaulted(m1, out, s); return ok },
			"not known valid":    func() bool { _, ok := m.Defaulted(invalid, out, s); return ok },
			"another kind":       func() bool { _, ok := m.Defaulted(m1, otherKind, s); return ok },
			"no schema":          func() bool { _, ok := m.Defaulted(m1, out, nil); return ok },
			"no previous merge":  func() bool { _, ok := m.Defaulted(nil, out, s); return ok },
			"no object":          func() bool { _, ok := m.Defaulted(m1, nil, s); return ok },
			"nil merger":         func() bool { _, ok := (*Merger)(nil).Defaulted(m1, out, s); return ok },
			"the merger's again": func() bool { _, ok := m.Defaulted(m1, out, s); return !ok },
		} {
			if try() {
				t.Errorf("%s: Defaulted vouches for it", name)
			}
		}
	})
}

// patchErrors tells that a and b are both errors of the patch's
// conversion, whose structured-merge-diff lists in map order.
func patchErrors(a, b error) bool {
	const prefix = "error applying patch: failed to convert patch object to typed object: "
	return strings.HasPrefix(a.Error(), prefix) && strings.HasPrefix(b.Error(), prefix)
}
