package applyconfig

import (
	"context"
	"reflect"
	"strings"
	"sync"
	"testing"

	"k8s.io/apiserver/pkg/cel/mutation/dynamic"

	"github.com/mutatis-dev/mutatis/internal/celobject"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/environment"
)

var (
	compilerOnce sync.Once
	compiler     plugincel.ConditionCompiler
	compilerErr  error
)

// compileApplyConfiguration compiles an expression the way kube-apiserver
// compiles a MutatingAdmissionPolicy ApplyConfiguration.
func compileApplyConfiguration(t *testing.T, expr string) plugincel.MutatingEvaluator {
	t.Helper()
	compilerOnce.Do(func() {
		compiler, compilerErr = plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	})
	if compilerErr != nil {
		t.Fatal(compilerErr)
	}
	ev := compiler.(*plugincel.CompositedCompiler).CompileMutatingEvaluator(
		&patch.ApplyConfigurationCondition{Expression: expr},
		plugincel.OptionalVariableDeclarations{HasPatchTypes: true},
		environment.StoredExpressions)
	if errs := ev.CompilationErrors(); len(errs) > 0 {
		t.Fatalf("compiling %q: %v", expr, errs)
	}
	return ev
}

func versionedAttributes(obj *unstructured.Unstructured, gvr schema.GroupVersionResource) *admission.VersionedAttributes {
	gvk := obj.GroupVersionKind()
	attrs := admission.NewAttributesRecord(obj, nil, gvk, obj.GetNamespace(), obj.GetName(), gvr,
		"", admission.Create, &metav1.CreateOptions{}, false, nil)
	return &admission.VersionedAttributes{
		Attributes:         attrs,
		VersionedKind:      gvk,
		VersionedObject:    admission.NewLazyObject(obj),
		VersionedOldObject: admission.NewLazyObject(nil),
	}
}

func evaluate(t *testing.T, ev plugincel.MutatingEvaluator, live *unstructured.Unstructured, gvr schema.GroupVersionResource) ref.Val {
	t.Helper()
	va := versionedAttributes(live, gvr)
	req := plugincel.CreateAdmissionRequest(va.Attributes, metav1.GroupVersionResource(gvr), metav1.GroupVersionKind(va.VersionedKind))
	res, _, err := ev.ForInput(context.Background(), va, req, plugincel.OptionalVariableBindings{}, nil, celconfig.RuntimeCELCostBudget)
	if err != nil {
		t.Fatal(err)
	}
	if res.Error != nil {
		t.Fatalf("evaluation: %v", res.Error)
	}
	return res.EvalResult
}

// upstreamPatch runs kube-apiserver's ApplyConfiguration patcher end to end.
func upstreamPatch(t *testing.T, ev plugincel.MutatingEvaluator, tc managedfields.TypeConverter, live *unstructured.Unstructured, gvr schema.GroupVersionResource) (runtime.Object, error) {
	t.Helper()
	p := patch.NewApplyConfigurationPatcher(ev)
	req := patch.Request{
		MatchedResource:     gvr,
		VersionedAttributes: versionedAttributes(live, gvr),
		ObjectInterfaces:    admission.NewObjectInterfacesFromScheme(runtime.NewScheme()),
		OptionalVariables:   plugincel.OptionalVariableBindings{},
		TypeConverter:       tc,
	}
	return p.Patch(context.Background(), req, celconfig.RuntimeCELCostBudget)
}

func TestFromCELMatchesUpstreamPatcher(t *testing.T) {
	s := sharedSchemas(t)
	deployments := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	cases := []struct {
		name    string
		live    string
		gvr     schema.GroupVersionResource
		expr    string
		wantErr string
	}{
		{name: "adds a label", live: liveDeployment, gvr: deployments,
			expr: `Object{metadata: Object.metadata{labels: {"b": "2"}}}`},
		{name: "sets replicas from the object", live: liveDeployment, gvr: deployments,
			expr: `Object{spec: Object.spec{replicas: object.spec.replicas + 2}}`},
		{name: "adds a container by name", live: liveDeployment, gvr: deployments,
			expr: `Object{spec: Object.spec{template: Object.spec.template{spec: Object.spec.template.spec{
				containers: [Object.spec.template.spec.containers{name: "new", image: "busybox"}]}}}}`},
		{name: "merges env of a container", live: liveDeployment, gvr: deployments,
			expr: `Object{spec: Object.spec{template: Object.spec.template{spec: Object.spec.template.spec{
				containers: [Object.spec.template.spec.containers{name: "app",
					env: [Object.spec.template.spec.containers.env{name: "A", value: "10"}]}]}}}}`},
		{name: "sets finalizers", live: liveDeployment, gvr: deployments,
			expr: `Object{metadata: Object.metadata{finalizers: ["example.com/z"]}}`},
		{name: "refuses a mismatched initializer name", live: liveDeployment, gvr: deployments,
			expr:    `Object{spec: Object.spec{template: Object.spec.wrong{}}}`,
			wantErr: `type mismatch: unexpected type name "Object.spec.wrong", expected "Object.spec.template", which matches field name path from root Object type`},
		{name: "refuses a string where a map belongs", live: liveDeployment, gvr: deployments,
			expr:    `Object{metadata: Object.metadata{labels: "x"}}`,
			wantErr: `.metadata.labels: expected map, got &{x}`},
		{name: "refuses a CEL null", live: liveDeployment, gvr: deployments,
			expr:    `Object{metadata: Object.metadata{labels: {"a": null}}}`,
			wantErr: "failed to convert patch object to typed object"},
		{name: "refuses non-string map keys at the top level", live: liveDeployment, gvr: deployments,
			expr:    `Object{spec: {1: "a"}}`,
			wantErr: "invalid return type: *dynamic.ObjectVal"},
		{name: "refuses nested non-string map keys with upstream's odd message", live: liveDeployment, gvr: deployments,
			expr:    `Object{metadata: Object.metadata{labels: {1: "a"}}}`,
			wantErr: `.metadata: expected map, got &{fail to convert field "labels": map key '\x01' is of type types.Int, not string}`},
		{name: "refuses an unknown field", live: liveDeployment, gvr: deployments,
			expr:    `Object{spec: Object.spec{bogus: 1}}`,
			wantErr: "field not declared in schema"},
		{name: "refuses tolerations", live: liveDeployment, gvr: deployments,
			expr: `Object{spec: Object.spec{template: Object.spec.template{spec: Object.spec.template.spec{
				tolerations: [Object.spec.template.spec.tolerations{key: "k", operator: "Exists"}]}}}}`,
			wantErr: "may not mutate atomic arrays, maps or structs: .spec.template.spec.tolerations"},
		{name: "sets a CR map-list item", live: liveWidget, gvr: widgets,
			expr: `Object{spec: Object.spec{ports: [Object.spec.ports{name: "https", protocol: "TCP", port: 443}]}}`},
		{name: "sets a CR int-or-string", live: liveWidget, gvr: widgets,
			expr: `Object{spec: Object.spec{port: "http"}}`},
		{name: "sets a CR number from a double", live: liveWidget, gvr: widgets,
			expr: `Object{spec: Object.spec{ratio: 0.25}}`},
		{name: "sets unknown fields of a CR", live: liveWidget, gvr: widgets,
			expr: `Object{spec: Object.spec{config: Object.spec.config{extra: {"k": "v"}, other: [1, 2]}}}`},
		{name: "lists inside map literals stay CEL values as upstream", live: liveWidget, gvr: widgets,
			expr:    `Object{spec: Object.spec{config: Object.spec.config{extra: {"k": [1, 2]}}}}`,
			wantErr: ".spec.config.extra.k: expected map, got &{[1 2]}"},
		{name: "nested lists stay CEL values as upstream", live: liveWidget, gvr: widgets,
			expr:    `Object{spec: Object.spec{config: Object.spec.config{extra: {"k": [[1]]}}}}`,
			wantErr: "error applying patch"},
		{name: "refuses a CR atomic list", live: liveWidget, gvr: widgets,
			expr:    `Object{spec: Object.spec{args: ["--x"]}}`,
			wantErr: "may not mutate atomic arrays, maps or structs: .spec.args"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			live := &unstructured.Unstructured{Object: fromYAML(t, c.live)}
			tc, err := s.TypeConverter(live.GroupVersionKind())
			if err != nil {
				t.Fatal(err)
			}
			ev := compileApplyConfiguration(t, c.expr)

			var got *unstructured.Unstructured
			m, err := FromCEL(evaluate(t, ev, live.DeepCopy(), c.gvr))
			if err == nil {
				got, err = Merge(tc, live.DeepCopy(), m)
			}
			want, wantErr := upstreamPatch(t, ev, tc, live.DeepCopy(), c.gvr)

			if (err == nil) != (wantErr == nil) || (err != nil && !sameError(err.Error(), wantErr.Error())) {
				t.Fatalf("error mismatch:\n mutatis:  %v\n upstream: %v", err, wantErr)
			}
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("result mismatch:\n mutatis:  %#v\n upstream: %#v", got.Object, want)
			}
		})
	}
}

func TestFromCELRefusesOtherValues(t *testing.T) {
	for _, c := range []struct {
		name string
		v    ref.Val
		want string
	}{
		{name: "a string", v: types.String("x"), want: "unsupported return type from ApplyConfiguration expression: string"},
		{name: "a map", v: types.NewStringStringMap(types.DefaultTypeAdapter, map[string]string{"a": "b"}), want: "unsupported return type from ApplyConfiguration expression: map(dyn, dyn)"},
		{name: "nil", v: nil, want: "unsupported return type from ApplyConfiguration expression: <nil>"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := FromCEL(c.v)
			if err == nil || err.Error() != c.want {
				t.Fatalf("error = %v, want %q", err, c.want)
			}
		})
	}
}

// TestConvertObjectIsUpstreamValue checks the fast conversion of Object
// values against dynamic.ObjectVal's own Value(), and that it answers the
// values CEL literals build.
func TestConvertObjectIsUpstreamValue(t *testing.T) {
	deployments := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	live := &unstructured.Unstructured{Object: fromYAML(t, liveDeployment)}
	for _, c := range []struct {
		expr string
		fast bool
	}{
		{`Object{metadata: Object.metadata{labels: {"b": "2"}, annotations: {}}}`, true},
		{`Object{spec: Object.spec{replicas: 3, paused: true, minReadySeconds: object.spec.replicas}}`, true},
		{`Object{spec: Object.spec{template: Object.spec.template{spec: Object.spec.template.spec{
			containers: [Object.spec.template.spec.containers{name: "side", image: "busybox", args: ["a", "b"],
				ports: [Object.spec.template.spec.containers.ports{containerPort: 80}]}],
			volumes: []}}}}`, true},
		{`Object{spec: Object.spec{x: 0.5, y: [dyn(1), dyn(2.5), dyn("s"), dyn(true)], z: {"k": 1}}}`, true},
		{`Object{spec: Object.spec{x: [Object.spec.x{a: 1}], y: {"k": Object.spec.y{b: "c"}}}}`, true},
		{`Object{metadata: Object.metadata{labels: {"a": null}}}`, false},
		{`Object{spec: Object.spec{x: b"bytes"}}`, false},
		{`Object{spec: Object.spec{x: [[1]]}}`, false},
		{`Object{spec: Object.spec{x: {"k": [1]}}}`, false},
		{`Object{spec: Object.spec{x: {1: "a"}}}`, false},
		{`Object{spec: Object.spec{x: timestamp("2026-01-01T00:00:00Z")}}`, false},
		{`Object{metadata: Object.metadata{labels: object.metadata.labels}}`, false},
		{`Object{spec: Object.spec{x: ["a"] + ["b"], y: [1, 2].map(i, i * 2)}}`, false},
		{`Object{spec: Object.spec{x: 1u}}`, false},
	} {
		t.Run(c.expr, func(t *testing.T) {
			v := evaluate(t, compileApplyConfiguration(t, c.expr), live.DeepCopy(), deployments)
			ov, ok := v.(*dynamic.ObjectVal)
			if !ok {
				t.Fatalf("not an Object: %v", v)
			}
			got, fast := celobject.Native(ov)
			// Cases marked false may go either way; a fast answer must be right.
			if c.fast && !fast {
				t.Fatal("the fast conversion refused a CEL literal")
			}
			if fast && !reflect.DeepEqual(got, ov.Value()) {
				t.Fatalf("fast conversion %#v\nupstream %#v", got, ov.Value())
			}
		})
	}
}
