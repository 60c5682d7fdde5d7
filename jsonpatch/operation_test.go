package jsonpatch

import (
	"context"
	gojson "encoding/json"
	"math"
	"reflect"
	"testing"

	"github.com/google/cel-go/common/types"
	"google.golang.org/protobuf/types/known/structpb"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/google/cel-go/common/types/ref"
)

// evalPatch compiles and evaluates a JSONPatch expression without inputs.
func evalPatch(t *testing.T, expr string) ref.Val {
	t.Helper()
	compiler, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		t.Fatal(err)
	}
	ev := compiler.CompileMutatingEvaluator(&patch.JSONPatchCondition{Expression: expr},
		plugincel.OptionalVariableDeclarations{HasPatchTypes: true}, environment.StoredExpressions)
	if errs := ev.CompilationErrors(); len(errs) > 0 {
		t.Fatalf("compile %s: %v", expr, errs)
	}
	obj := testConfigMap()
	gvk := obj.GroupVersionKind()
	attrs := admission.NewAttributesRecord(obj, nil, gvk, obj.Namespace, obj.Name, configMapsGVR, "",
		admission.Create, &metav1.CreateOptions{}, false, nil)
	vAttrs := &admission.VersionedAttributes{Attributes: attrs, VersionedKind: gvk, VersionedObject: admission.NewLazyObject(obj)}
	req := plugincel.CreateAdmissionRequest(attrs, metav1.GroupVersionResource(configMapsGVR), metav1.GroupVersionKind(gvk))
	res, _, err := ev.ForInput(context.Background(), vAttrs, req, plugincel.OptionalVariableBindings{}, nil, 1_000_000)
	if err != nil {
		t.Fatal(err)
	}
	if res.Error != nil {
		t.Fatal(res.Error)
	}
	return res.EvalResult
}

func TestFromCEL(t *testing.T) {
	tests := []struct {
		name string
		expr string
		want []Operation
	}{
		{
			name: "op, path and an absent value",
			expr: `[JSONPatch{op: "remove", path: "/a"}]`,
			want: []Operation{{Op: "remove", Path: "/a"}},
		},
		{
			name: "an empty from is absent",
			expr: `[JSONPatch{op: "move", from: "", path: "/a"}, JSONPatch{op: "copy", from: "/b", path: "/a"}]`,
			want: []Operation{{Op: "move", Path: "/a"}, {Op: "copy", From: "/b", Path: "/a"}},
		},
		{
			name: "escapeKey escapes tilde and slash",
			expr: `[JSONPatch{op: "add", path: "/m/" + jsonpatch.escapeKey("a~b/c"), value: "v"}]`,
			want: []Operation{{Op: "add", Path: "/m/a~0b~1c", Value: "v", HasValue: true}},
		},
		{
			name: "strings, as a value and in a list",
			expr: `[JSONPatch{op: "add", path: "/a", value: "é\u2028<&>"}, JSONPatch{op: "add", path: "/b", value: ["", "x"]}]`,
			want: []Operation{{Op: "add", Path: "/a", Value: "é\u2028<&>", HasValue: true}, {Op: "add", Path: "/b", Value: []any{"", "x"}, HasValue: true}},
		},
		{
			name: "null is a present value",
			expr: `[JSONPatch{op: "add", path: "/a", value: null}]`,
			want: []Operation{{Op: "add", Path: "/a", Value: nil, HasValue: true}},
		},
		{
			name: "safe integers stay numbers, larger ones become strings",
			expr: `[JSONPatch{op: "add", path: "/a", value: [dyn(9007199254740991), dyn(-9007199254740991), dyn(9007199254740992), dyn(-9007199254740992), dyn(18446744073709551615u)]}]`,
			want: []Operation{{Op: "add", Path: "/a", HasValue: true, Value: []any{
				int64(9007199254740991), int64(-9007199254740991), "9007199254740992", "-9007199254740992", "18446744073709551615"}}},
		},
		{
			name: "doubles keep their JSON reading",
			expr: `[JSONPatch{op: "add", path: "/a", value: [2.0, 2.5, 1e21, 1e20, -0.0, 1e-7]}]`,
			want: []Operation{{Op: "add", Path: "/a", HasValue: true, Value: []any{
				int64(2), 2.5, 1e21, 1e20, math.Copysign(0, -1), 1e-7}}},
		},
		{
			name: "maps, bytes, timestamps and durations",
			expr: `[JSONPatch{op: "add", path: "/a", value: {"b": dyn(b"hi"), "t": dyn(timestamp("2024-01-02T03:04:05Z")), "d": dyn(duration("1m")), "x": dyn(true)}}]`,
			want: []Operation{{Op: "add", Path: "/a", HasValue: true, Value: map[string]any{
				"b": "aGk=", "t": "2024-01-02T03:04:05Z", "d": "60s", "x": true}}},
		},
		{
			name: "Object values become maps",
			expr: `[JSONPatch{op: "add", path: "/spec", value: Object.spec{replicas: 2, selector: Object.spec.selector{matchLabels: {"a": "b"}}, names: ["x"]}}]`,
			want: []Operation{{Op: "add", Path: "/spec", HasValue: true, Value: map[string]any{
				"replicas": int64(2), "selector": map[string]any{"matchLabels": map[string]any{"a": "b"}}, "names": []any{"x"}}}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := FromCEL(evalPatch(t, tc.expr))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got  %#v\nwant %#v", got, tc.want)
			}
			// The values encode exactly as upstream's structpb encoding does.
			for _, op := range got {
				if !op.HasValue {
					continue
				}
				mine, err := gojson.Marshal(op.Value)
				if err != nil {
					t.Fatal(err)
				}
				pv, err := structpb.NewValue(op.Value)
				if err != nil {
					t.Fatal(err)
				}
				theirs, err := gojson.Marshal(pv)
				if err != nil {
					t.Fatal(err)
				}
				if string(mine) != string(theirs) {
					t.Errorf("value encodes as %s, upstream as %s", mine, theirs)
				}
			}
		})
	}
}

func TestFromCELErrors(t *testing.T) {
	tests := []struct {
		name string
		val  ref.Val
		want string
	}{
		{name: "not a list", val: types.String("x"), want: "type mismatch: JSONPatchType.expression should evaluate to array"},
		{name: "element not a JSONPatch", val: types.DefaultTypeAdapter.NativeToValue([]any{"x"}),
			want: "type mismatch: JSONPatchType.expression should evaluate to array of JSONPatch: unsupported native conversion from string to '*mutation.JSONPatchVal'"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := FromCEL(tc.val)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("err = %v, want %s", err, tc.want)
			}
		})
	}
	for _, expr := range map[string]string{
		"NaN":             `[JSONPatch{op: "add", path: "/a", value: double("NaN")}]`,
		"infinity":        `[JSONPatch{op: "add", path: "/a", value: [double("-Infinity")]}]`,
		"non-string keys": `[JSONPatch{op: "add", path: "/a", value: {1: 2}}]`,
		"type mismatch":   `[JSONPatch{op: "add", path: "/spec", value: Object.spec{template: Object.spec.tmpl{}}}]`,
	} {
		if _, err := FromCEL(evalPatch(t, expr)); err == nil {
			t.Errorf("%s: no error", expr)
		}
	}
}
