package scheme

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/mutatis-dev/mutatis/internal/valuetest"
	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apiserver/pkg/admission"
	"sigs.k8s.io/yaml"
)

var (
	widgetV1 = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	widgetV2 = schema.GroupVersionKind{Group: "example.com", Version: "v2", Kind: "Widget"}
	thingV1  = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "ClusterThing"}
)

func loadCRD(t testing.TB, name string) *unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "crd", name))
	if err != nil {
		t.Fatal(err)
	}
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(j); err != nil {
		t.Fatal(err)
	}
	return u
}

// obj decodes JSON as objects reach the engine (int64 and float64).
func obj(t testing.TB, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := utiljson.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("%v: %s", err, s)
	}
	return m
}

// newTestCRs registers the widget CRD in unstructured form and the cluster
// thing CRD in typed form.
func newTestCRs(t testing.TB) *CustomResources {
	t.Helper()
	c := &CustomResources{} // the zero value is usable
	if err := c.Add(loadCRD(t, "widgets.yaml")); err != nil {
		t.Fatal(err)
	}
	typed := &apiextensionsv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(loadCRD(t, "clusterthings.yaml").Object, typed); err != nil {
		t.Fatal(err)
	}
	if err := c.Add(typed); err != nil {
		t.Fatal(err)
	}
	return c
}

// oracleStructural builds a version's structural schema the way
// getOrCreateServingInfoFor does, independently of CustomResources.
func oracleStructural(t testing.TB, file, version string) *structuralschema.Structural {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(loadCRD(t, file).Object, crd); err != nil {
		t.Fatal(err)
	}
	for _, v := range crd.Spec.Versions {
		if v.Name != version {
			continue
		}
		internal := &apiextensionsinternal.CustomResourceValidation{}
		if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(v.Schema, internal, nil); err != nil {
			t.Fatal(err)
		}
		s, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
		if err != nil {
			t.Fatal(err)
		}
		s = s.DeepCopy()
		if err := structuraldefaulting.PruneDefaults(s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	t.Fatalf("no version %s in %s", version, file)
	return nil
}

// oracleDecode is the request decoder's effect on an object of the CRD's
// kind in its version, as unstructuredSchemaCoercer.apply and
// unstructuredDefaulter call upstream: prune, drop non-nullable nulls,
// coerce metadata, default.
func oracleDecode(t testing.TB, file, version string, in map[string]any) map[string]any {
	t.Helper()
	s := oracleStructural(t, file, version)
	out := runtime.DeepCopyJSON(in)
	meta, found, err := schemaobjectmeta.GetObjectMeta(out, false)
	if err != nil {
		t.Fatal(err)
	}
	structuralpruning.Prune(out, s, true)
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(out, s)
	if err := schemaobjectmeta.Coerce(nil, out, s, false, false); err != nil {
		t.Fatal(err)
	}
	if found {
		if err := schemaobjectmeta.SetObjectMeta(out, meta); err != nil {
			t.Fatal(err)
		}
	}
	structuraldefaulting.Default(out, s)
	return out
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%#v", v)
	}
	return string(b)
}

func TestDecodeRequest(t *testing.T) {
	c := newTestCRs(t)
	for _, tc := range []struct {
		name            string
		gvk             schema.GroupVersionKind
		file            string
		in              string
		fieldValidation string
		want            string
		warnings        []string
		err             string
		noOracle        bool
	}{{
		name: "defaults at several depths, unknown fields pruned with warnings",
		gvk:  widgetV1, file: "widgets.yaml",
		in:       `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"default"},"spec":{"mode":"a","bogus":{"x":1},"items":[{"key":"k","junk":true}]},"status":{"phase":"P","other":1},"top":1}`,
		want:     `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"default"},"spec":{"mode":"a","size":1,"color":"red","minReplicas":1,"maxReplicas":3,"nested":{"level":{"depth":3}},"items":[{"key":"k","weight":5}]},"status":{"phase":"P"}}`,
		warnings: []string{`unknown field "spec.bogus"`, `unknown field "spec.items[0].junk"`, `unknown field "status.other"`, `unknown field "top"`},
	}, {
		name: "x-kubernetes-preserve-unknown-fields keeps everything below it",
		gvk:  widgetV1, file: "widgets.yaml",
		in:   `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"mode":"a","extra":{"any":{"deep":[1,"two",null]},"n":null}}}`,
		want: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"mode":"a","size":1,"color":"red","minReplicas":1,"maxReplicas":3,"nested":{"level":{"depth":3}},"extra":{"any":{"deep":[1,"two",null]},"n":null}}}`,
	}, {
		name: "non-nullable nulls without default are dropped, with default are defaulted",
		gvk:  widgetV1, file: "widgets.yaml",
		in:   `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"mode":"a","size":null,"nested":{"level":{"label":null,"depth":null}}}}`,
		want: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"mode":"a","size":1,"color":"red","minReplicas":1,"maxReplicas":3,"nested":{"level":{"depth":3}}}}`,
	}, {
		name: "unknown metadata fields are dropped and reported",
		gvk:  widgetV1, file: "widgets.yaml",
		in:       `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","colour":"x","labels":{"a":"b"}},"spec":{"mode":"a"}}`,
		want:     `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","labels":{"a":"b"}},"spec":{"mode":"a","size":1,"color":"red","minReplicas":1,"maxReplicas":3,"nested":{"level":{"depth":3}}}}`,
		warnings: []string{`unknown field "metadata.colour"`},
	}, {
		name: "fieldValidation Ignore: pruned silently",
		gvk:  widgetV1, file: "widgets.yaml", fieldValidation: "Ignore",
		in:   `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"mode":"a","bogus":1}}`,
		want: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"mode":"a","size":1,"color":"red","minReplicas":1,"maxReplicas":3,"nested":{"level":{"depth":3}}}}`,
	}, {
		name: "fieldValidation Strict: 400 naming every unknown field",
		gvk:  widgetV1, fieldValidation: "Strict",
		in:  `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","colour":1},"spec":{"mode":"a","bogus":1}}`,
		err: `Widget in version "v1" cannot be handled as a Widget: strict decoding error: unknown field "metadata.colour", unknown field "spec.bogus"`,
	}, {
		name: "v2 has its own defaults and fields",
		gvk:  widgetV2, file: "widgets.yaml",
		in:       `{"apiVersion":"example.com/v2","kind":"Widget","metadata":{"name":"w"},"spec":{"mode":"a","color":"red"}}`,
		want:     `{"apiVersion":"example.com/v2","kind":"Widget","metadata":{"name":"w"},"spec":{"mode":"a","size":2,"v2only":"fromv2"}}`,
		warnings: []string{`unknown field "spec.color"`},
	}, {
		name: "body of another version than the URL's",
		gvk:  widgetV1,
		in:   `{"apiVersion":"example.com/v2","kind":"Widget","metadata":{"name":"w"}}`,
		err:  `the API version in the data (example.com/v2) does not match the expected API version (example.com/v1)`,
	}, {
		name: "body without kind",
		gvk:  widgetV1,
		in:   `{"apiVersion":"example.com/v1","metadata":{"name":"w"}}`,
		err:  `the object provided is unrecognized (must be of type Widget): Object 'Kind' is missing in '{"apiVersion":"example.com/v1","metadata":{"name":"w"}}' ({"apiVersion":"example.com/v1" ...)`,
	}, {
		name: "metadata of the wrong type",
		gvk:  widgetV1,
		in:   `{"apiVersion":"example.com/v1","kind":"Widget","metadata":"w"}`,
		err:  `Widget in version "v1" cannot be handled as a Widget: json: cannot unmarshal string into Go value of type v1.ObjectMeta`,
	}, {
		name: "cluster-scoped kind preserving unknown fields at the root",
		gvk:  thingV1, file: "clusterthings.yaml",
		in:       `{"apiVersion":"example.com/v1","kind":"ClusterThing","metadata":{"name":"t"},"spec":{"tier":"gold","free":1},"anything":{"a":null}}`,
		want:     `{"apiVersion":"example.com/v1","kind":"ClusterThing","metadata":{"name":"t"},"spec":{"tier":"gold","replicas":2},"anything":{"a":null}}`,
		warnings: []string{`unknown field "spec.free"`},
	}, {
		name: "bad fieldValidation",
		gvk:  widgetV1, fieldValidation: "Loud",
		in:  `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"}}`,
		err: `fieldValidation: Unsupported value: "Loud": supported values: "Ignore", "Strict", "Warn"`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			in := obj(t, tc.in)
			before := valuetest.DeepCopy(in)
			got, warnings, err := c.DecodeRequest(in, tc.gvk, tc.fieldValidation)
			if !reflect.DeepEqual(in, before) {
				t.Fatalf("input modified")
			}
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error %v, want %s", err, tc.err)
				}
				if !apierrors.IsBadRequest(err) {
					t.Fatalf("error %v is not a 400", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := obj(t, tc.want); !reflect.DeepEqual(got, want) {
				t.Fatalf("got  %s\nwant %s", mustJSON(got), mustJSON(want))
			}
			sort.Strings(warnings)
			if !reflect.DeepEqual(warnings, tc.warnings) {
				t.Fatalf("warnings %q, want %q", warnings, tc.warnings)
			}
			if tc.file != "" && !tc.noOracle {
				if want := oracleDecode(t, tc.file, tc.gvk.Version, obj(t, tc.in)); !reflect.DeepEqual(got, want) {
					t.Fatalf("differs from upstream's calls:\ngot    %s\noracle %s", mustJSON(got), mustJSON(want))
				}
			}
		})
	}
}

func TestDefaultIsTheMutationDefaulter(t *testing.T) {
	c := newTestCRs(t)
	for _, tc := range []struct {
		name, in, want string
		gvk            schema.GroupVersionKind
	}{{
		name: "defaults, and unknown fields and nulls stay (no pruning after a mutation)",
		gvk:  widgetV1,
		in:   `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"mode":"a","bogus":1,"nested":{"level":{"label":null}},"items":[{}]}}`,
		want: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"mode":"a","bogus":1,"size":1,"color":"red","minReplicas":1,"maxReplicas":3,"nested":{"level":{"label":null,"depth":3}},"items":[{"weight":5}]}}`,
	}, {
		name: "the object's own version's schema is used",
		gvk:  widgetV1,
		in:   `{"apiVersion":"example.com/v2","kind":"Widget","metadata":{"name":"w"},"spec":{}}`,
		want: `{"apiVersion":"example.com/v2","kind":"Widget","metadata":{"name":"w"},"spec":{"size":2,"v2only":"fromv2"}}`,
	}, {
		name: "an object of another kind is left alone",
		gvk:  widgetV1,
		in:   `{"apiVersion":"example.com/v1","kind":"Gadget","spec":{}}`,
		want: `{"apiVersion":"example.com/v1","kind":"Gadget","spec":{}}`,
	}, {
		name: "an absent parent with a default is created, then defaulted inside",
		gvk:  widgetV1,
		in:   `{"apiVersion":"example.com/v1","kind":"Widget","spec":{"mode":"a","nested":{}}}`,
		want: `{"apiVersion":"example.com/v1","kind":"Widget","spec":{"mode":"a","size":1,"color":"red","minReplicas":1,"maxReplicas":3,"nested":{"level":{"depth":3}}}}`,
	}, {
		name: "cluster-scoped",
		gvk:  thingV1,
		in:   `{"apiVersion":"example.com/v1","kind":"ClusterThing","spec":{},"x":null}`,
		want: `{"apiVersion":"example.com/v1","kind":"ClusterThing","spec":{"replicas":2},"x":null}`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			in := obj(t, tc.in)
			got, err := c.Default(in, tc.gvk)
			if err != nil {
				t.Fatal(err)
			}
			if want := obj(t, tc.want); !reflect.DeepEqual(got, want) {
				t.Fatalf("got  %s\nwant %s", mustJSON(got), mustJSON(want))
			}
			if ref, err := c.defaultReference(in, tc.gvk); err != nil || !reflect.DeepEqual(ref, got) {
				t.Fatalf("reference: %s, %v", mustJSON(ref), err)
			}
			checkCRDefaultShared(t, c, in, got, tc.gvk)
			if !reflect.DeepEqual(in, obj(t, tc.in)) {
				t.Fatal("input modified")
			}
			again, err := c.Default(got, tc.gvk)
			if err != nil || !reflect.DeepEqual(again, got) {
				t.Fatalf("not idempotent: %s, %v", mustJSON(again), err)
			}
		})
	}
}

// validWidget is a decoded (defaulted) valid widget.
const validWidget = `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"default"},"spec":{"mode":"a","size":1,"color":"red","minReplicas":1,"maxReplicas":3,"nested":{"level":{"depth":3}}}}`

// withSpec is validWidget with spec fields set (JSON object members).
func withSpec(fields string) string {
	var w, f map[string]any
	if err := utiljson.Unmarshal([]byte(validWidget), &w); err != nil {
		panic(err)
	}
	if err := utiljson.Unmarshal([]byte("{"+fields+"}"), &f); err != nil {
		panic(err)
	}
	for k, v := range f {
		w["spec"].(map[string]any)[k] = v
	}
	b, err := json.Marshal(w)
	if err != nil {
		panic(err)
	}
	return string(b)
}

const blocked = `, <nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]`

// checkErr fails unless err's message is want (no error if want is
// empty); it tells whether an error was expected.
func checkErr(t *testing.T, err error, want string) bool {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatalf("unexpected error %v", err)
		}
		return false
	}
	if err == nil || err.Error() != want {
		t.Fatalf("error\n%v\nwant\n%s", err, want)
	}
	return true
}

func TestValidateCreate(t *testing.T) {
	c := newTestCRs(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name, in, namespace string
		gvk                 schema.GroupVersionKind
		err                 string // exact message
		code                int32
		warnings            []string
	}{{
		name: "valid",
		in:   validWidget,
	}, {
		name: "maximum",
		in:   withSpec(`"size":12`),
		err:  `Widget.example.com "w" is invalid: spec.size: Invalid value: 12: spec.size in body should be less than or equal to 10`,
	}, {
		name: "enum",
		in:   withSpec(`"color":"pink"`),
		err:  `Widget.example.com "w" is invalid: [spec.color: Unsupported value: "pink": supported values: "red", "green", "blue"` + blocked,
	}, {
		name: "maxLength",
		in:   withSpec(`"name":"abcdefg"`),
		err:  `Widget.example.com "w" is invalid: [spec.name: Too long: may not be more than 5 bytes` + blocked,
	}, {
		name: "pattern",
		in:   withSpec(`"name":"AB"`),
		err:  `Widget.example.com "w" is invalid: spec.name: Invalid value: "AB": spec.name in body should match '^[a-z]+$'`,
	}, {
		name: "required",
		in:   strings.Replace(validWidget, `"mode":"a",`, ``, 1),
		err:  `Widget.example.com "w" is invalid: [spec.mode: Required value` + blocked,
	}, {
		name: "type",
		in:   withSpec(`"size":"big"`),
		err:  `Widget.example.com "w" is invalid: [spec.size: Invalid value: "string": spec.size in body must be of type integer: "string"` + blocked,
	}, {
		name: "minimum in a list item",
		in:   withSpec(`"items":[{"key":"k","weight":-1}]`),
		err:  `Widget.example.com "w" is invalid: spec.items[0].weight: Invalid value: -1: spec.items[0].weight in body should be greater than or equal to 0`,
	}, {
		name: "maxItems",
		in:   withSpec(`"tags":["a","b","c","d"]`),
		err:  `Widget.example.com "w" is invalid: [spec.tags: Too many: 4: must have at most 3 items` + blocked,
	}, {
		name: "list-type set",
		in:   withSpec(`"tags":["a","a"]`),
		err:  `Widget.example.com "w" is invalid: spec.tags[1]: Duplicate value: "a"`,
	}, {
		name: "x-kubernetes-validations rule",
		in:   strings.Replace(validWidget, `"minReplicas":1`, `"minReplicas":5`, 1),
		err:  `Widget.example.com "w" is invalid: spec: Invalid value: minReplicas must not exceed maxReplicas`,
	}, {
		name: "rule over a missing field",
		in:   strings.Replace(validWidget, `"minReplicas":1,`, ``, 1),
		err:  `Widget.example.com "w" is invalid: spec: Invalid value: "object": no such key: minReplicas evaluating rule: minReplicas must not exceed maxReplicas`,
	}, {
		name: "schema errors hold back the rules",
		in:   strings.Replace(withSpec(`"color":"pink"`), `"minReplicas":1`, `"minReplicas":5`, 1),
		err:  `Widget.example.com "w" is invalid: [spec.color: Unsupported value: "pink": supported values: "red", "green", "blue"` + blocked,
	}, {
		name: "other schema errors do not",
		in:   strings.Replace(withSpec(`"size":11`), `"minReplicas":1`, `"minReplicas":5`, 1),
		err:  `Widget.example.com "w" is invalid: [spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10, spec: Invalid value: minReplicas must not exceed maxReplicas]`,
	}, {
		name: "metadata.name",
		in:   strings.Replace(validWidget, `"name":"w"`, `"name":"W_1"`, 1),
		err:  `Widget.example.com "W_1" is invalid: metadata.name: Invalid value: "W_1": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
	}, {
		name: "no name",
		in:   strings.Replace(validWidget, `"name":"w",`, ``, 1),
		err:  `Widget.example.com "" is invalid: [metadata.name: Required value: name or generateName is required` + blocked,
	}, {
		name: "labels",
		in:   strings.Replace(validWidget, `"name":"w"`, `"name":"w","labels":{"a b":"c"}`, 1),
		err:  `Widget.example.com "w" is invalid: metadata.labels: Invalid value: "a b": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
	}, {
		name: "kind of the object",
		in:   strings.Replace(validWidget, `"kind":"Widget"`, `"kind":"Gadget"`, 1),
		err:  `Gadget.example.com "w" is invalid: kind: Invalid value: "Gadget": must be Widget`,
	}, {
		name:      "namespace of the object is not the request's",
		in:        validWidget,
		namespace: "other",
		err:       `the namespace of the provided object does not match the namespace sent on the request`,
		code:      400,
	}, {
		name:     "finalizer warning",
		in:       strings.Replace(validWidget, `"name":"w"`, `"name":"w","finalizers":["foo"]`, 1),
		warnings: []string{`metadata.finalizers: "foo": prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers`},
	}, {
		name: "cluster-scoped: enum",
		gvk:  thingV1,
		in:   `{"apiVersion":"example.com/v1","kind":"ClusterThing","metadata":{"name":"t"},"spec":{"replicas":2,"tier":"bronze"}}`,
		err:  `ClusterThing.example.com "t" is invalid: spec.tier: Unsupported value: "bronze": supported values: "gold", "silver"`, // no rules, nothing held back
	}, {
		name: "cluster-scoped: minimum",
		gvk:  thingV1,
		in:   `{"apiVersion":"example.com/v1","kind":"ClusterThing","metadata":{"name":"t"},"spec":{"replicas":0}}`,
		err:  `ClusterThing.example.com "t" is invalid: spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1`,
	}, {
		name: "cluster-scoped: a namespace in the object is cleared, not refused",
		gvk:  thingV1,
		in:   `{"apiVersion":"example.com/v1","kind":"ClusterThing","metadata":{"name":"t","namespace":"default"},"spec":{"replicas":1}}`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			gvk, ns := tc.gvk, tc.namespace
			if gvk.Empty() {
				gvk = widgetV1
				if ns == "" {
					ns = "default"
				}
			}
			in := obj(t, tc.in)
			warnings, err := c.Validate(ctx, admission.Create, in, nil, gvk, ns)
			if !reflect.DeepEqual(in, obj(t, tc.in)) {
				t.Fatal("input modified")
			}
			if !reflect.DeepEqual(warnings, tc.warnings) {
				t.Fatalf("warnings %q, want %q", warnings, tc.warnings)
			}
			if !checkErr(t, err, tc.err) {
				return
			}
			code := tc.code
			if code == 0 {
				code = 422
			}
			var status *apierrors.StatusError
			if se, ok := err.(*apierrors.StatusError); ok {
				status = se
			}
			if status == nil || status.ErrStatus.Code != code {
				t.Fatalf("error %#v is not a %d StatusError", err, code)
			}
		})
	}
}

func TestValidateUpdateRatchets(t *testing.T) {
	c := newTestCRs(t)
	ctx := context.Background()
	// The stored object predates the current schema: size 12 and tags
	// over maxItems are invalid now.
	old := obj(t, strings.Replace(withSpec(`"size":12,"tags":["a","b","c","d"],"owner":"ann"`), `"name":"w"`, `"name":"w","generation":4,"uid":"u1","resourceVersion":"9"`, 1))
	for _, tc := range []struct {
		name   string
		change func(spec map[string]any)
		err    string
	}{{
		name:   "unchanged invalid fields pass when another field changes",
		change: func(spec map[string]any) { spec["mode"] = "b" },
	}, {
		name:   "a changed invalid field fails",
		change: func(spec map[string]any) { spec["size"] = int64(13) },
		err:    `Widget.example.com "w" is invalid: spec.size: Invalid value: 13: spec.size in body should be less than or equal to 10`,
	}, {
		name:   "a changed list over maxItems fails, the unchanged size passes",
		change: func(spec map[string]any) { spec["tags"] = []any{"a", "b", "c", "e"} },
		err:    `Widget.example.com "w" is invalid: [spec.tags: Too many: 4: must have at most 3 items` + blocked,
	}, {
		name:   "transition rule (oldSelf)",
		change: func(spec map[string]any) { spec["owner"] = "bob" },
		err:    `Widget.example.com "w" is invalid: spec.owner: Invalid value: "bob": owner cannot be changed`,
	}, {
		name: "CEL rule on a changed object is evaluated",
		change: func(spec map[string]any) {
			spec["size"] = int64(1)
			spec["tags"] = []any{"a"}
			spec["minReplicas"] = int64(9)
		},
		err: `Widget.example.com "w" is invalid: spec: Invalid value: minReplicas must not exceed maxReplicas`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			updated := runtime.DeepCopyJSON(old)
			tc.change(updated["spec"].(map[string]any))
			_, err := c.Validate(ctx, admission.Update, updated, old, widgetV1, "default")
			checkErr(t, err, tc.err)
		})
	}

	// Store.Update's optimistic concurrency.
	noRV := runtime.DeepCopyJSON(old)
	delete(noRV["metadata"].(map[string]any), "resourceVersion")
	_, err := c.Validate(ctx, admission.Update, noRV, old, widgetV1, "default")
	checkErr(t, err, `widgets.example.com "w" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update`)
	staleRV := runtime.DeepCopyJSON(old)
	staleRV["metadata"].(map[string]any)["resourceVersion"] = "8"
	_, err = c.Validate(ctx, admission.Update, staleRV, old, widgetV1, "default")
	checkErr(t, err, `Operation cannot be fulfilled on widgets.example.com "w": the object has been modified; please apply your changes to the latest version and try again`)
	if !apierrors.IsConflict(err) {
		t.Fatalf("%v is not a 409", err)
	}

	// CEL ratcheting: a rule failing on an unchanged value is not
	// re-checked.
	badOld := obj(t, strings.Replace(validWidget, `"minReplicas":1`, `"minReplicas":5`, 1))
	badOld["metadata"].(map[string]any)["resourceVersion"] = "9"
	relabeled := runtime.DeepCopyJSON(badOld)
	relabeled["metadata"].(map[string]any)["labels"] = map[string]any{"x": "y"}
	if _, err := c.Validate(ctx, admission.Update, relabeled, badOld, widgetV1, "default"); err != nil {
		t.Fatalf("unchanged spec failing a rule must ratchet: %v", err)
	}
}

func TestPersist(t *testing.T) {
	c := newTestCRs(t)
	ctx := context.Background()

	// CREATE: status dropped (status subresource), generation 1, and a
	// field a mutation added after decoding is stored as it is (the object
	// is in the storage version: no conversion, no pruning) but pruned on
	// every read.
	in := obj(t, strings.Replace(withSpec(`"addedByPolicy":"x"`), `"spec":`, `"status":{"phase":"Ready"},"spec":`, 1))
	p, err := c.Persist(ctx, admission.Create, in, nil, widgetV1, "default")
	if err != nil {
		t.Fatal(err)
	}
	wantStored := obj(t, strings.Replace(withSpec(`"addedByPolicy":"x"`), `"namespace":"default"`, `"namespace":"default","generation":1`, 1))
	wantReturned := obj(t, strings.Replace(validWidget, `"namespace":"default"`, `"namespace":"default","generation":1`, 1))
	if !reflect.DeepEqual(p.Stored, wantStored) {
		t.Fatalf("stored  %s\nwant    %s", mustJSON(p.Stored), mustJSON(wantStored))
	}
	if !reflect.DeepEqual(p.Returned, wantReturned) {
		t.Fatalf("returned %s\nwant     %s", mustJSON(p.Returned), mustJSON(wantReturned))
	}

	// UPDATE: status kept from the old object, generation bumped by a spec
	// change, resourceVersion cleared for storage.
	old := obj(t, strings.Replace(withSpec(`"owner":"ann"`), `"namespace":"default"`, `"namespace":"default","generation":3,"resourceVersion":"8"`, 1))
	old["status"] = map[string]any{"phase": "Old"}
	upd := runtime.DeepCopyJSON(old)
	upd["spec"].(map[string]any)["mode"] = "b"
	upd["status"] = map[string]any{"phase": "New"}
	p, err = c.Persist(ctx, admission.Update, upd, old, widgetV1, "default")
	if err != nil {
		t.Fatal(err)
	}
	want := runtime.DeepCopyJSON(old)
	want["spec"].(map[string]any)["mode"] = "b"
	want["metadata"].(map[string]any)["generation"] = int64(4)
	delete(want["metadata"].(map[string]any), "resourceVersion")
	if !reflect.DeepEqual(p.Returned, want) || !reflect.DeepEqual(p.Stored, want) {
		t.Fatalf("update:\nstored   %s\nreturned %s\nwant     %s", mustJSON(p.Stored), mustJSON(p.Returned), mustJSON(want))
	}

	// An invalid object is not stored.
	p, err = c.Persist(ctx, admission.Create, obj(t, withSpec(`"size":99`)), nil, widgetV1, "default")
	if err == nil || p.Stored != nil {
		t.Fatalf("stored an invalid object: %v %v", p, err)
	}
}

func TestStoreAcrossVersions(t *testing.T) {
	c := newTestCRs(t)
	if v, err := c.StorageVersion(widgetV2); err != nil || v != "v1" {
		t.Fatalf("storage version %q %v", v, err)
	}
	// A v2 object is converted (None strategy: apiVersion only) to v1 for
	// storage and pruned with v1's schema there; reading it back as v2
	// defaults with the storage version's schema (before converting), prunes
	// with v2's, and repairs a missing generation.
	in := obj(t, `{"apiVersion":"example.com/v2","kind":"Widget","metadata":{"name":"w","resourceVersion":"3"},"spec":{"mode":"a","v2only":"x","unknown":1}}`)
	stored, returned, err := c.Store(in, widgetV2)
	if err != nil {
		t.Fatal(err)
	}
	wantStored := obj(t, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"mode":"a"}}`)
	wantReturned := obj(t, `{"apiVersion":"example.com/v2","kind":"Widget","metadata":{"name":"w","generation":1},"spec":{"mode":"a","size":1}}`)
	if !reflect.DeepEqual(stored, wantStored) || !reflect.DeepEqual(returned, wantReturned) {
		t.Fatalf("stored   %s\nreturned %s", mustJSON(stored), mustJSON(returned))
	}
	// Whole floats come back as integers from the JSON storage.
	_, returned, err = c.Store(obj(t, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","generation":2},"spec":{"mode":"a"}}`), widgetV1)
	if err != nil {
		t.Fatal(err)
	}
	if got := returned["spec"].(map[string]any)["size"]; got != int64(1) {
		t.Fatalf("size %#v", got)
	}
}

func TestAddRefusesWhatKubeAPIServerRefuses(t *testing.T) {
	c := NewCustomResources()
	bad := loadCRD(t, "widgets.yaml")
	versions := bad.Object["spec"].(map[string]any)["versions"].([]any)
	props := versions[0].(map[string]any)["schema"].(map[string]any)["openAPIV3Schema"].(map[string]any)["properties"].(map[string]any)
	props["spec"].(map[string]any)["properties"].(map[string]any)["size"].(map[string]any)["default"] = int64(11)
	err := c.Add(bad)
	want := `CustomResourceDefinition.apiextensions.k8s.io "widgets.example.com" is invalid: spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[size].default: Invalid value: 11:  in body should be less than or equal to 10`
	if err == nil || err.Error() != want {
		t.Fatalf("error\n%v\nwant\n%s", err, want)
	}
	if c.Recognizes(widgetV1) {
		t.Fatal("a refused CRD was registered")
	}
	for _, o := range []runtime.Object{nil, (*unstructured.Unstructured)(nil), &unstructured.Unstructured{Object: map[string]any{"kind": "ConfigMap", "apiVersion": "v1"}}} {
		if err := c.Add(o); err == nil {
			t.Fatalf("Add(%#v) accepted", o)
		}
	}
}

func TestAddRemoveRecognizes(t *testing.T) {
	c := newTestCRs(t)
	for _, gvk := range []schema.GroupVersionKind{widgetV1, widgetV2, thingV1} {
		if !c.Recognizes(gvk) {
			t.Fatalf("%s not recognized", gvk)
		}
	}
	if got := c.CRDs(); !reflect.DeepEqual(got, []string{"clusterthings.example.com", "widgets.example.com"}) {
		t.Fatalf("CRDs %v", got)
	}
	c.Remove("widgets.example.com")
	c.Remove("nothing")
	if c.Recognizes(widgetV1) || c.Recognizes(widgetV2) || !c.Recognizes(thingV1) {
		t.Fatal("Remove")
	}
	_, err := c.Default(map[string]any{}, widgetV1)
	if err == nil || err.Error() != "no CustomResourceDefinition serves example.com/v1, Kind=Widget" {
		t.Fatalf("error %v", err)
	}
}

func TestBadInputIsAnError(t *testing.T) {
	c := newTestCRs(t)
	ctx := context.Background()
	bad := []map[string]any{
		nil,
		{"apiVersion": "example.com/v1", "kind": "Widget", "spec": map[string]any{"size": 3}},             // int, not JSON's int64
		{"apiVersion": "example.com/v1", "kind": "Widget", "spec": map[string]any{"tags": []string{"a"}}}, // typed slice
		{"apiVersion": "example.com/v1", "kind": "Widget", "spec": func() {}},
		{"apiVersion": 3, "kind": []any{}, "metadata": map[string]any{"name": 1}},
		{"apiVersion": "example.com/v1", "kind": "Widget"}, // no metadata
	}
	for i, o := range bad {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			_, _, _ = c.DecodeRequest(o, widgetV1, "")
			_, _ = c.Default(o, widgetV1)
			_, _ = c.Validate(ctx, admission.Create, o, nil, widgetV1, "default")
			_, _ = c.Validate(ctx, admission.Update, o, o, widgetV1, "default")
			_, _, _ = c.Store(o, widgetV1)
			if _, err := c.Validate(ctx, admission.Delete, o, nil, widgetV1, "default"); err == nil {
				t.Fatal("DELETE accepted")
			}
		})
	}
	if _, err := c.Validate(ctx, admission.Update, obj(t, validWidget), nil, widgetV1, "default"); err == nil {
		t.Fatal("UPDATE without old accepted")
	}
}

func TestConcurrentUse(t *testing.T) {
	c := newTestCRs(t)
	crd := loadCRD(t, "widgets.yaml")
	in := obj(t, withSpec(`"bogus":1`))
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for j := 0; j < 20; j++ {
				if i == 0 && j%5 == 0 {
					_ = c.Add(crd)
				}
				if out, err := c.Default(in, widgetV1); err == nil && out["spec"].(map[string]any)["bogus"] != int64(1) {
					t.Error("Default pruned")
				}
				_, _, _ = c.DecodeRequest(in, widgetV1, "")
				_, _ = c.Validate(context.Background(), admission.Create, in, nil, widgetV1, "default")
			}
		}(i)
	}
	wg.Wait()
}

func FuzzCustomResourceDefault(f *testing.F) {
	for _, s := range []string{
		validWidget,
		withSpec(`"bogus":{"a":[1,2,null]},"extra":{"x":null},"items":[{},{"weight":null}]`),
		`{"apiVersion":"example.com/v2","kind":"Widget","spec":{"size":null}}`,
		`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":3},"spec":[]}`,
		`{"apiVersion":"example.com/v1","kind":"ClusterThing","spec":{"replicas":"x"},"nested":{"spec":null}}`,
		`{"kind":"Widget"}`,
		`{}`,
	} {
		f.Add(s, false)
		f.Add(s, true)
	}
	c := newTestCRs(f)
	f.Fuzz(func(t *testing.T, s string, thing bool) {
		var in map[string]any
		if err := utiljson.Unmarshal([]byte(s), &in); err != nil || in == nil {
			return
		}
		gvk := widgetV1
		if thing {
			gvk = thingV1
		}
		before := valuetest.DeepCopy(in)
		out, err := c.defaultReference(in, gvk)
		if err != nil {
			t.Fatalf("Default: %v", err)
		}
		checkCRDefaultShared(t, c, in, out, gvk)
		again, err := c.Default(out, gvk)
		if err != nil || !reflect.DeepEqual(out, again) {
			t.Fatalf("Default not idempotent:\n%s\n%s", mustJSON(out), mustJSON(again))
		}
		decoded, _, err := c.DecodeRequest(in, gvk, "")
		if err == nil {
			// A decoded object is a fixed point of decoding (pruned and
			// defaulted) and of the mutation defaulter.
			if d2, err := c.Default(decoded, gvk); err != nil || !reflect.DeepEqual(d2, decoded) {
				t.Fatalf("decoded object not defaulted:\n%s\n%s", mustJSON(decoded), mustJSON(d2))
			}
		}
		_, _ = c.Validate(context.Background(), admission.Create, in, nil, gvk, "")
		_, _, _ = c.Store(in, gvk)
		if !reflect.DeepEqual(in, before) {
			t.Fatal("input modified")
		}
	})
}

func TestWebhookConversionIsNotSimulated(t *testing.T) {
	crd := loadCRD(t, "widgets.yaml")
	crd.Object["spec"].(map[string]any)["conversion"] = map[string]any{
		"strategy": "Webhook",
		"webhook": map[string]any{
			"clientConfig":             map[string]any{"url": "https://convert.example.com/convert"},
			"conversionReviewVersions": []any{"v1"},
		},
	}
	c := NewCustomResources()
	if err := c.Add(crd); err != nil {
		t.Fatal(err)
	}
	// The storage version needs no conversion.
	if _, returned, err := c.Store(obj(t, withSpec(`"bogus":1`)), widgetV1); err != nil || returned["spec"].(map[string]any)["bogus"] != nil {
		t.Fatalf("%v %v", returned, err)
	}
	_, _, err := c.Store(obj(t, `{"apiVersion":"example.com/v2","kind":"Widget","metadata":{"name":"w"},"spec":{}}`), widgetV2)
	if err == nil || !strings.Contains(err.Error(), "CustomResourceDefinition widgets.example.com: conversion from example.com/v2 to example.com/v1 needs the conversion webhook, which is not simulated") {
		t.Fatalf("error %v", err)
	}
}

// TestAroundMutatingAdmission follows a CREATE through the CRD handler as
// kube-apiserver runs it around a mutating admission policy: decoding,
// a JSON patch that removes a defaulted field and adds an undeclared one,
// the dispatcher's defaulting, then the registry and storage.
func TestAroundMutatingAdmission(t *testing.T) {
	c := newTestCRs(t)
	ctx := context.Background()
	decoded, warnings, err := c.DecodeRequest(obj(t, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"default"},"spec":{"mode":"a","typo":1}}`), widgetV1, "")
	if err != nil || !reflect.DeepEqual(warnings, []string{`unknown field "spec.typo"`}) {
		t.Fatalf("%v %q", err, warnings)
	}
	// The policy's patch: remove /spec/size, add /spec/fromPolicy.
	patched := runtime.DeepCopyJSON(decoded)
	delete(patched["spec"].(map[string]any), "size")
	patched["spec"].(map[string]any)["fromPolicy"] = "x"
	admitted, err := c.Default(patched, widgetV1)
	if err != nil {
		t.Fatal(err)
	}
	spec := admitted["spec"].(map[string]any)
	if spec["size"] != int64(1) || spec["fromPolicy"] != "x" {
		t.Fatalf("admitted %s", mustJSON(admitted))
	}
	p, err := c.Persist(ctx, admission.Create, admitted, nil, widgetV1, "default")
	if err != nil {
		t.Fatal(err)
	}
	if p.Stored["spec"].(map[string]any)["fromPolicy"] != "x" {
		t.Fatalf("stored %s: the storage version is written without conversion, so unpruned", mustJSON(p.Stored))
	}
	want := obj(t, strings.Replace(validWidget, `"namespace":"default"`, `"namespace":"default","generation":1`, 1))
	if !reflect.DeepEqual(p.Returned, want) {
		t.Fatalf("returned %s\nwant     %s", mustJSON(p.Returned), mustJSON(want))
	}
}
