package params

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/mutatis-dev/mutatis/scheme"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

type scopes map[schema.GroupVersionKind]bool

func (s scopes) Namespaced(gvk schema.GroupVersionKind) (bool, bool) {
	n, ok := s[gvk]
	return n, ok
}

var (
	configMapGVK = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	settingGVK   = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Setting"} // cluster-scoped CR
)

func obj(apiVersion, kind, ns, name string, lbls map[string]any) *unstructured.Unstructured {
	md := map[string]any{"name": name}
	if ns != "" {
		md["namespace"] = ns
	}
	if lbls != nil {
		md["labels"] = lbls
	}
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": md, "data": map[string]any{"k": name}}}
}

func TestCollect(t *testing.T) {
	deny := admissionregistrationv1.DenyAction
	allow := admissionregistrationv1.AllowAction
	cm := &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
	setting := &admissionregistrationv1.ParamKind{APIVersion: "example.com/v1", Kind: "Setting"}
	src := NewMemory(
		obj("v1", "ConfigMap", "shop", "defaults", map[string]any{"tier": "a"}),
		obj("v1", "ConfigMap", "shop", "b-other", map[string]any{"tier": "a"}),
		obj("v1", "ConfigMap", "shop", "a-other", map[string]any{"tier": "b"}),
		obj("v1", "ConfigMap", "ops", "defaults", nil),
		obj("example.com/v1", "Setting", "", "global", map[string]any{"tier": "a"}),
	)
	c := &Collector{Source: src, Scopes: scopes{configMapGVK: true, settingGVK: false}, Scheme: scheme.New()}
	cases := []struct {
		name      string
		kind      *admissionregistrationv1.ParamKind
		ref       *admissionregistrationv1.ParamRef
		namespace string
		want      []string // namespace/name of params; "<null>" for a nil param
		wantErr   string
	}{
		{name: "no paramKind evaluates once with null params", ref: &admissionregistrationv1.ParamRef{Name: "x"}, namespace: "shop", want: []string{"<null>"}},
		{name: "no paramRef evaluates once with null params", kind: cm, namespace: "shop", want: []string{"<null>"}},
		{name: "name in the request namespace", kind: cm, ref: &admissionregistrationv1.ParamRef{Name: "defaults"}, namespace: "shop", want: []string{"shop/defaults"}},
		{name: "name in an explicit namespace", kind: cm, ref: &admissionregistrationv1.ParamRef{Name: "defaults", Namespace: "ops"}, namespace: "shop", want: []string{"ops/defaults"}},
		{name: "namespaced param for a cluster-scoped request is a configuration error", kind: cm, ref: &admissionregistrationv1.ParamRef{Name: "defaults"}, wantErr: "cannot use namespaced paramRef in policy binding that matches cluster-scoped resources"},
		{name: "namespace on a cluster-scoped paramKind is a configuration error", kind: setting, ref: &admissionregistrationv1.ParamRef{Name: "global", Namespace: "shop"}, namespace: "shop", wantErr: "paramRef.namespace must not be provided for a cluster-scoped `paramKind`"},
		{name: "cluster-scoped param by name", kind: setting, ref: &admissionregistrationv1.ParamRef{Name: "global"}, namespace: "shop", want: []string{"/global"}},
		{name: "missing param with Allow skips the binding", kind: cm, ref: &admissionregistrationv1.ParamRef{Name: "none", ParameterNotFoundAction: &allow}, namespace: "shop", want: []string{}},
		{name: "missing param with Deny is an error", kind: cm, ref: &admissionregistrationv1.ParamRef{Name: "none", ParameterNotFoundAction: &deny}, namespace: "shop", wantErr: "no params found for policy binding with `Deny` parameterNotFoundAction"},
		{name: "selector returns every match in name order", kind: cm, ref: &admissionregistrationv1.ParamRef{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "a"}}}, namespace: "shop", want: []string{"shop/b-other", "shop/defaults"}},
		{name: "empty selector lists everything in the namespace", kind: cm, ref: &admissionregistrationv1.ParamRef{Selector: &metav1.LabelSelector{}}, namespace: "shop", want: []string{"shop/a-other", "shop/b-other", "shop/defaults"}},
		{name: "selector without matches and Deny is an error", kind: cm, ref: &admissionregistrationv1.ParamRef{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "z"}}, ParameterNotFoundAction: &deny}, namespace: "shop", wantErr: "no params found"},
		{name: "invalid selector is an error", kind: cm, ref: &admissionregistrationv1.ParamRef{Selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Bogus"}}}}, namespace: "shop", wantErr: `"Bogus" is not a valid label selector operator`},
		{name: "unknown paramKind", kind: &admissionregistrationv1.ParamKind{APIVersion: "nope/v1", Kind: "Nope"}, ref: &admissionregistrationv1.ParamRef{Name: "x"}, namespace: "shop", wantErr: "paramKind kind `&ParamKind{APIVersion:nope/v1,Kind:Nope,}` not known"},
		{name: "name and selector together", kind: cm, ref: &admissionregistrationv1.ParamRef{Name: "x", Selector: &metav1.LabelSelector{}}, namespace: "shop", wantErr: "mutually exclusive"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Collect, and CollectRef with one Ref prepared for every
			// request (twice, as for two requests).
			prepared := NewRef(tc.ref)
			for round := range 3 {
				var got []Param
				var err error
				if round == 0 {
					got, err = c.Collect(context.Background(), tc.kind, tc.ref, tc.namespace)
				} else {
					got, err = c.CollectRef(context.Background(), tc.kind, prepared, tc.namespace)
				}
				if tc.wantErr != "" {
					if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
						t.Fatalf("round %d: err = %v, want %q", round, err, tc.wantErr)
					}
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				var names []string
				for _, p := range got {
					if p.Object == nil {
						names = append(names, "<null>")
					} else {
						names = append(names, p.Namespace+"/"+p.Name)
					}
				}
				if !slices.Equal(names, tc.want) && (len(names) != 0 || len(tc.want) != 0) {
					t.Fatalf("round %d: got %v, want %v", round, names, tc.want)
				}
			}
		})
	}
}

func TestBuiltinParamsHaveNoTypeMeta(t *testing.T) {
	withStray := obj("v1", "ConfigMap", "shop", "defaults", nil)
	withStray.Object["stray"] = "dropped by the Go type"
	c := &Collector{Source: NewMemory(withStray), Scopes: scopes{configMapGVK: true}, Scheme: scheme.New()}
	got, err := c.Collect(context.Background(), &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}, &admissionregistrationv1.ParamRef{Name: "defaults"}, "shop")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got[0].Object["kind"]; ok {
		t.Fatalf("built-in param keeps kind: %v", got[0].Object)
	}
	if _, ok := got[0].Object["apiVersion"]; ok {
		t.Fatalf("built-in param keeps apiVersion: %v", got[0].Object)
	}
	if _, ok := got[0].Object["stray"]; ok {
		t.Fatalf("built-in param is not normalized through its Go type: %v", got[0].Object)
	}

	cr := &Collector{Source: NewMemory(obj("example.com/v1", "Setting", "", "global", nil)), Scopes: scopes{settingGVK: false}, Scheme: scheme.New()}
	got, err = cr.Collect(context.Background(), &admissionregistrationv1.ParamKind{APIVersion: "example.com/v1", Kind: "Setting"}, &admissionregistrationv1.ParamRef{Name: "global"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Object["kind"] != "Setting" {
		t.Fatalf("custom resource param lost its kind: %v", got[0].Object)
	}
}

func TestCheckKind(t *testing.T) {
	c := &Collector{Source: NewMemory(), Scopes: scopes{configMapGVK: true, settingGVK: false}, Scheme: scheme.New()}
	for _, tc := range []struct {
		name     string
		kind     *admissionregistrationv1.ParamKind
		wantSkip bool
		wantErr  string
	}{
		{name: "no paramKind", kind: nil},
		{name: "namespaced built-in", kind: &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}},
		{name: "cluster-scoped custom resource", kind: &admissionregistrationv1.ParamKind{APIVersion: "example.com/v1", Kind: "Setting"}},
		{name: "unknown kind", kind: &admissionregistrationv1.ParamKind{APIVersion: "example.com/v1", Kind: "Nope"}, wantErr: "failed to find resource referenced by paramKind: 'example.com/v1, Kind=Nope'"},
		{name: "unparsable apiVersion", kind: &admissionregistrationv1.ParamKind{APIVersion: "a/b/c", Kind: "X"}, wantSkip: true, wantErr: "failed to parse paramKind APIVersion: unexpected GroupVersion string: a/b/c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			skip, err := c.CheckKind(tc.kind)
			if skip != tc.wantSkip {
				t.Errorf("skip = %v, want %v", skip, tc.wantSkip)
			}
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.wantErr {
				t.Errorf("err = %q, want %q", got, tc.wantErr)
			}
		})
	}
}
