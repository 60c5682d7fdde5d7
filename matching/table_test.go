package matching

import (
	"fmt"
	"reflect"
	"sort"
	"sync"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestBuiltinTableDescribesKubernetes137(t *testing.T) {
	tb := DefaultTable()
	cases := []struct {
		gvr        schema.GroupVersionResource
		kind       string
		namespaced bool
		subs       map[string]schema.GroupVersionKind
	}{
		{deployGVR, "Deployment", true, map[string]schema.GroupVersionKind{"scale": scaleGVK, "status": deployGVK}},
		{podGVR, "Pod", true, map[string]schema.GroupVersionKind{
			"exec":                {Version: "v1", Kind: "PodExecOptions"},
			"eviction":            {Group: "policy", Version: "v1", Kind: "Eviction"},
			"binding":             {Version: "v1", Kind: "Binding"},
			"ephemeralcontainers": podGVK,
			"resize":              podGVK,
			"status":              podGVK,
		}},
		{namespacesGVR, "Namespace", false, map[string]schema.GroupVersionKind{"status": namespaceGVK, "finalize": namespaceGVK}},
		{nodeGVR, "Node", false, map[string]schema.GroupVersionKind{"proxy": {Version: "v1", Kind: "NodeProxyOptions"}}},
		{schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}, "ServiceAccount", true, map[string]schema.GroupVersionKind{"token": {Group: "authentication.k8s.io", Version: "v1", Kind: "TokenRequest"}}},
		{schema.GroupVersionResource{Version: "v1", Resource: "replicationcontrollers"}, "ReplicationController", true, map[string]schema.GroupVersionKind{"scale": scaleGVK}},
		{schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingadmissionpolicies"}, "MutatingAdmissionPolicy", false, nil},
		{schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"}, "Role", true, nil},
		{schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}, "CustomResourceDefinition", false, map[string]schema.GroupVersionKind{"status": {Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}}},
		{schema.GroupVersionResource{Group: "authentication.k8s.io", Version: "v1", Resource: "tokenreviews"}, "TokenReview", false, nil},
		{schema.GroupVersionResource{Group: "resource.k8s.io", Version: "v1", Resource: "resourceclaims"}, "ResourceClaim", true, map[string]schema.GroupVersionKind{"status": {Group: "resource.k8s.io", Version: "v1", Kind: "ResourceClaim"}}},
	}
	for _, c := range cases {
		t.Run(c.gvr.String(), func(t *testing.T) {
			r, ok := tb.Resource(c.gvr)
			if !ok {
				t.Fatalf("%v not in the table", c.gvr)
			}
			if r.Kind != c.kind || r.Namespaced != c.namespaced {
				t.Errorf("got kind %s namespaced %v", r.Kind, r.Namespaced)
			}
			for sub, kind := range c.subs {
				s, ok := r.Subresource(sub)
				if !ok || s.Kind != kind {
					t.Errorf("subresource %s: %+v %v, want %v", sub, s, ok, kind)
				}
				if got := tb.KindFor(c.gvr, sub); got != kind {
					t.Errorf("KindFor(%s) = %v", sub, got)
				}
			}
			if got := tb.KindFor(c.gvr, ""); got != r.GroupVersionKind() {
				t.Errorf("KindFor = %v", got)
			}
		})
	}
}

func TestDefaultTableServesOnlyDefaultGroupVersions(t *testing.T) {
	tb := DefaultTable()
	for _, gvr := range []schema.GroupVersionResource{
		{Group: "apps", Version: "v1beta1", Resource: "deployments"},
		{Group: "extensions", Version: "v1beta1", Resource: "deployments"},
		{Group: "resource.k8s.io", Version: "v1beta1", Resource: "resourceclaims"},
		{Group: "admissionregistration.k8s.io", Version: "v1alpha1", Resource: "mutatingadmissionpolicies"},
		{Group: "batch", Version: "v1beta1", Resource: "cronjobs"},
	} {
		if _, ok := tb.Resource(gvr); ok {
			t.Errorf("%v is served by default", gvr)
		}
	}
	if len(tb.Resources()) == len(BuiltinResources()) {
		t.Error("the default table holds every built-in version")
	}
	if _, err := NewBuiltinTable(schema.GroupVersion{Group: "apps", Version: "v1beta1"}); err == nil {
		t.Error("apps/v1beta1 accepted")
	}
}

// equivalenceClasses lists the groups of equivalent group/resources with more than one member.
func equivalenceClasses(tb *Table) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range tb.Resources() {
		grs := tb.equivalentGroupResources(schema.GroupResource{Group: r.Group, Resource: r.Resource})
		if len(grs) < 2 {
			continue
		}
		s := fmt.Sprint(grs)
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

func TestEquivalences(t *testing.T) {
	tb := DefaultTable()
	if got, want := equivalenceClasses(tb), []string{"[events events.events.k8s.io]"}; !reflect.DeepEqual(got, want) {
		t.Errorf("cross-group equivalences: %v, want %v", got, want)
	}
	if got, want := tb.EquivalentResourcesFor(eventsV1GVR, ""), []schema.GroupVersionResource{eventGVR, eventsV1GVR}; !reflect.DeepEqual(got, want) {
		t.Errorf("events: %v, want %v", got, want)
	}
	if got, want := tb.EquivalentResourcesFor(hpaV1GVR, "status"), []schema.GroupVersionResource{hpaV2GVR, hpaV1GVR}; !reflect.DeepEqual(got, want) {
		t.Errorf("hpa status: %v, want %v", got, want)
	}
	if got := tb.EquivalentResourcesFor(deployGVR, "scale"); !reflect.DeepEqual(got, []schema.GroupVersionResource{deployGVR}) {
		t.Errorf("deployments/scale: %v", got)
	}
	if got := tb.EquivalentResourcesFor(schema.GroupVersionResource{Group: "x", Version: "v1", Resource: "y"}, ""); got != nil {
		t.Errorf("unknown resource: %v", got)
	}
	if got := tb.EquivalentResourcesFor(deployGVR, "nope"); got != nil {
		t.Errorf("unknown subresource: %v", got)
	}
	if got := tb.KindFor(deployGVR, "nope"); !got.Empty() {
		t.Errorf("unknown subresource kind: %v", got)
	}

	// With every built-in version enabled, versions come by priority and the only
	// cross-group equivalence is still events (extensions is gone).
	var all []schema.GroupVersion
	for _, gv := range builtinGroupVersions {
		all = append(all, schema.GroupVersion{Group: gv.Group, Version: gv.Version})
	}
	full, err := NewBuiltinTable(all...)
	if err != nil {
		t.Fatal(err)
	}
	if len(full.Resources()) != len(BuiltinResources()) {
		t.Errorf("%d of %d resources", len(full.Resources()), len(BuiltinResources()))
	}
	if got, want := equivalenceClasses(full), []string{"[events events.events.k8s.io]"}; !reflect.DeepEqual(got, want) {
		t.Errorf("cross-group equivalences: %v, want %v", got, want)
	}
	claims := schema.GroupVersionResource{Group: "resource.k8s.io", Version: "v1beta1", Resource: "resourceclaims"}
	var versions []string
	for _, gvr := range full.EquivalentResourcesFor(claims, "") {
		versions = append(versions, gvr.Version)
	}
	if got := fmt.Sprint(versions); got != "[v1 v1beta2 v1beta1 v1alpha3]" && got != "[v1 v1beta2 v1beta1]" {
		t.Errorf("resourceclaims versions: %v", got)
	}
}

func TestBuiltinStorageKey(t *testing.T) {
	served := map[string]bool{"": true, "apps": true, "networking.k8s.io": true, "events.k8s.io": true}
	for gr, want := range map[schema.GroupResource]string{
		{Resource: "pods"}:                                      "pods",
		{Resource: "services"}:                                  "services/specs",
		{Resource: "nodes"}:                                     "minions",
		{Resource: "replicationcontrollers"}:                    "controllers",
		{Group: "networking.k8s.io", Resource: "ingresses"}:     "ingress",
		{Group: "events.k8s.io", Resource: "events"}:            "events",
		{Group: "extensions", Resource: "deployments"}:          "deployments",
		{Group: "apps", Resource: "deployments"}:                "deployments",
		{Group: "example.com", Resource: "WidgetsWithCapitals"}: "widgetswithcapitals",
	} {
		if got := builtinStorageKey(gr, served); got != want {
			t.Errorf("%v: %q, want %q", gr, got, want)
		}
	}
}

func TestCRDs(t *testing.T) {
	tb := DefaultTable()
	crd := widgetsCRD.DeepCopy()
	crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1alpha1", Served: false,
		Subresources: &apiextensionsv1.CustomResourceSubresources{Scale: &apiextensionsv1.CustomResourceSubresourceScale{SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas"}}})
	if err := tb.AddCRD(crd); err != nil {
		t.Fatal(err)
	}
	alpha := schema.GroupVersionResource{Group: "example.com", Version: "v1alpha1", Resource: "widgets"}
	if got, want := tb.EquivalentResourcesFor(widgetBetaGVR, ""), []schema.GroupVersionResource{widgetV1GVR, widgetBetaGVR, alpha}; !reflect.DeepEqual(got, want) {
		t.Errorf("widgets: %v, want %v", got, want)
	}
	if got := tb.EquivalentResourcesFor(widgetBetaGVR, "status"); !reflect.DeepEqual(got, []schema.GroupVersionResource{widgetV1GVR, widgetBetaGVR}) {
		t.Errorf("widgets/status: %v", got)
	}
	if got := tb.KindFor(alpha, "scale"); got != scaleGVK {
		t.Errorf("widgets/scale kind: %v", got)
	}
	if r, _ := tb.Resource(alpha); !r.Namespaced || r.Kind != "Widget" {
		t.Errorf("widget resource: %+v", r)
	}
	if got := tb.ResourcesForKind(widgetV1GVK); len(got) != 1 || got[0].GroupVersionResource() != widgetV1GVR {
		t.Errorf("ResourcesForKind: %+v", got)
	}

	// Re-adding replaces: v1alpha1 is gone.
	if err := tb.AddCRD(widgetsCRD); err != nil {
		t.Fatal(err)
	}
	if _, ok := tb.Resource(alpha); ok {
		t.Error("v1alpha1 survived the update")
	}
	if got := tb.EquivalentResourcesFor(widgetV1GVR, ""); len(got) != 2 {
		t.Errorf("widgets after update: %v", got)
	}

	tb.RemoveCRD("widgets.example.com")
	if _, ok := tb.Resource(widgetV1GVR); ok {
		t.Error("widgets survived removal")
	}
	if got := tb.EquivalentResourcesFor(widgetV1GVR, ""); got != nil {
		t.Errorf("widgets equivalents after removal: %v", got)
	}
	if !tb.KindFor(widgetV1GVR, "status").Empty() {
		t.Error("widgets/status kind survived removal")
	}
	tb.RemoveCRD("widgets.example.com") // no-op

	// Cluster-scoped, names from status.
	cluster := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gadgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "example.com", Scope: apiextensionsv1.ClusterScoped,
			Names:    apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Kind: "Gadget"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true}}},
		Status: apiextensionsv1.CustomResourceDefinitionStatus{AcceptedNames: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Kind: "Gadget"}},
	}
	if err := tb.AddCRD(cluster); err != nil {
		t.Fatal(err)
	}
	if r, ok := tb.Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"}); !ok || r.Namespaced {
		t.Errorf("gadgets: %+v %v", r, ok)
	}

	for name, bad := range map[string]*apiextensionsv1.CustomResourceDefinition{
		"nil":         nil,
		"no group":    {Spec: apiextensionsv1.CustomResourceDefinitionSpec{Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "a", Kind: "A"}, Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1"}}}},
		"no versions": {Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "g", Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "a", Kind: "A"}}},
		"no version name": {Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "g", Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "a", Kind: "A"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{}}}},
		"shadows a built-in": {ObjectMeta: metav1.ObjectMeta{Name: "deployments.apps"}, Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "apps",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "deployments", Kind: "Deployment"}, Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1"}}}},
	} {
		if err := tb.AddCRD(bad); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if r, ok := tb.Resource(deployGVR); !ok || r.Kind != "Deployment" || len(r.Subresources) != 2 {
		t.Errorf("deployments damaged: %+v", r)
	}
}

func TestNewTable(t *testing.T) {
	tb := NewTable([]Resource{
		{Group: "g", Version: "v1", Resource: "things", Kind: "Thing", Namespaced: true},
		{Group: "g", Version: "v2", Resource: "things", Kind: "Thing", Namespaced: true},
		{Group: "h", Version: "v1", Resource: "things", Kind: "Thing"},
	})
	got := tb.EquivalentResourcesFor(schema.GroupVersionResource{Group: "g", Version: "v1", Resource: "things"}, "")
	if len(got) != 2 || got[0].Version != "v2" {
		t.Errorf("equivalents: %v", got)
	}
}

func TestTableConcurrentUse(t *testing.T) {
	tb := DefaultTable()
	m := NewMatcher(testNamespaceGetter(), tb)
	q := testRequests(t)
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for j := 0; j < 50; j++ {
				if err := tb.AddCRD(widgetsCRD); err != nil {
					t.Error(err)
				}
				tb.RemoveCRD(widgetsCRD.Name)
			}
		}()
		go func() {
			defer wg.Done()
			for j := 0; j < 50; j++ {
				tb.EquivalentResourcesFor(widgetBetaGVR, "")
				tb.KindFor(widgetV1GVR, "status")
				tb.Resources()
				_, _ = m.MatchResources(t.Context(), q.widgetBetaCreate, matchCases()[0].matchResources())
			}
		}()
	}
	wg.Wait()
}

// TestNewTableIsRegisterOneByOne: newTable builds each key's group
// resources once, after every resource is in; the table is the one
// registering the resources one by one (each registration rebuilding its
// key's) gives, with the default group/versions and with every one.
func TestNewTableIsRegisterOneByOne(t *testing.T) {
	var all []schema.GroupVersion
	for _, gv := range builtinGroupVersions {
		all = append(all, schema.GroupVersion{Group: gv.Group, Version: gv.Version})
	}
	for _, enable := range [][]schema.GroupVersion{nil, all} {
		got, err := NewBuiltinTable(enable...)
		if err != nil {
			t.Fatal(err)
		}
		want := emptyTable()
		for _, gvr := range got.order {
			want.register(got.resources[gvr], got.keys[gvr.GroupResource()])
		}
		if !reflect.DeepEqual(got.order, want.order) || !reflect.DeepEqual(got.resources, want.resources) ||
			!reflect.DeepEqual(got.kinds, want.kinds) || !reflect.DeepEqual(got.keys, want.keys) ||
			!reflect.DeepEqual(got.classes, want.classes) || !reflect.DeepEqual(got.groupResources, want.groupResources) {
			t.Errorf("enabling %d group/versions: newTable differs from registering one by one", len(enable))
		}
		if len(got.groupResources) < 60 {
			t.Errorf("%d group resources, want the built-in ones", len(got.groupResources))
		}
	}
}

// TestKindScopeIsResourcesForKind holds KindScope, remembered until the
// resources change, to the first of ResourcesForKind on every kind of the
// built-in table and on a custom resource added, re-added with another
// scope, and removed.
func TestKindScopeIsResourcesForKind(t *testing.T) {
	tb, err := NewBuiltinTable()
	if err != nil {
		t.Fatal(err)
	}
	check := func(step string, gvks ...schema.GroupVersionKind) {
		t.Helper()
		for _, gvk := range gvks {
			for range 2 { // computed, then remembered
				namespaced, known := tb.KindScope(gvk)
				rs := tb.ResourcesForKind(gvk)
				if known != (len(rs) > 0) || (known && namespaced != rs[0].Namespaced) {
					t.Fatalf("%s: KindScope(%v) = %v, %v; ResourcesForKind %+v", step, gvk, namespaced, known, rs)
				}
			}
		}
	}
	var builtin []schema.GroupVersionKind
	for _, r := range tb.Resources() {
		builtin = append(builtin, r.GroupVersionKind())
	}
	if len(builtin) < 50 {
		t.Fatalf("only %d built-in resources", len(builtin))
	}
	check("built-in", builtin...)
	check("unknown", schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Nothing"})

	check("before the CRD", widgetV1GVK)
	if err := tb.AddCRD(widgetsCRD); err != nil {
		t.Fatal(err)
	}
	if namespaced, known := tb.KindScope(widgetV1GVK); !namespaced || !known {
		t.Fatalf("after AddCRD: KindScope = %v, %v", namespaced, known)
	}
	check("after AddCRD", append(builtin, widgetV1GVK)...)

	clusterScoped := widgetsCRD.DeepCopy()
	clusterScoped.Spec.Scope = apiextensionsv1.ClusterScoped
	if err := tb.AddCRD(clusterScoped); err != nil {
		t.Fatal(err)
	}
	if namespaced, known := tb.KindScope(widgetV1GVK); namespaced || !known {
		t.Fatalf("after the CRD became cluster-scoped: KindScope = %v, %v", namespaced, known)
	}
	check("re-added cluster-scoped", widgetV1GVK)

	tb.RemoveCRD(widgetsCRD.Name)
	if _, known := tb.KindScope(widgetV1GVK); known {
		t.Fatal("after RemoveCRD: the kind is still known")
	}
	check("after RemoveCRD", append(builtin, widgetV1GVK)...)
}
