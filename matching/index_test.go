package matching

import (
	"context"
	"fmt"
	"math/rand"
	"reflect"
	"slices"
	"sync"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"

	"github.com/mutatis-dev/mutatis/internal/valuetest"
)

func lookup[T any](ix *Index[T], op admission.Operation, gvr schema.GroupVersionResource) []T {
	var out []T
	ix.Lookup(op, gvr, func(t T) bool {
		out = append(out, t)
		return true
	})
	return out
}

func TestIndexBuckets(t *testing.T) {
	ix := NewIndex[string](DefaultTable())
	ix.Add(Selector{Rules: []admissionregistrationv1.RuleWithOperations{podsCreate}}, "pods-create")
	ix.Add(Selector{All: true}, "all")
	ix.Add(Selector{Rules: []admissionregistrationv1.RuleWithOperations{rule(ops(opAll), strs("apps"), strs("v1"), strs("deployments/scale", "deployments"), "")}}, "deployments")
	ix.Add(Selector{Rules: []admissionregistrationv1.RuleWithOperations{rule(ops(opUpdate), strs("*"), strs("*"), strs("*/status"), "")}}, "status")
	ix.Add(Selector{Rules: []admissionregistrationv1.RuleWithOperations{rule(ops(opCreate), strs("events.k8s.io"), strs("v1"), strs("events"), "")}}, "events.k8s.io")
	none := ix.Add(Selector{}, "nothing")
	pods2 := ix.Add(SelectorForWebhook(&admissionregistrationv1.MutatingWebhook{Rules: []admissionregistrationv1.RuleWithOperations{podsCreate, podsCreate}}), "pods-create-2")

	cases := []struct {
		op   admission.Operation
		gvr  schema.GroupVersionResource
		want []string
	}{
		{admission.Create, podGVR, []string{"pods-create", "all", "pods-create-2"}},
		{admission.Update, podGVR, []string{"all", "status"}},
		{admission.Delete, deployGVR, []string{"all", "deployments"}},
		{admission.Create, eventGVR, []string{"all", "events.k8s.io"}}, // through equivalence
		{admission.Create, nodeGVR, []string{"all"}},
	}
	for _, c := range cases {
		if got := lookup(ix, c.op, c.gvr); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s %v: %v, want %v", c.op, c.gvr, got, c.want)
		}
	}
	if ix.Len() != 7 {
		t.Errorf("Len = %d", ix.Len())
	}
	ix.Remove(pods2)
	ix.Remove(none)
	ix.Remove(12345)
	if got := lookup(ix, admission.Create, podGVR); !reflect.DeepEqual(got, []string{"pods-create", "all"}) {
		t.Errorf("after removal: %v", got)
	}
	// Early stop.
	n := 0
	ix.Lookup(admission.Create, podGVR, func(string) bool { n++; return false })
	if n != 1 {
		t.Errorf("yield called %d times after returning false", n)
	}
	var all []string
	ix.All(func(s string) bool { all = append(all, s); return true })
	if !reflect.DeepEqual(all, []string{"pods-create", "all", "deployments", "status", "events.k8s.io"}) {
		t.Errorf("All: %v", all)
	}

	// Without a table there are no equivalents.
	plain := NewIndex[string](nil)
	plain.Add(Selector{Rules: []admissionregistrationv1.RuleWithOperations{rule(ops(opCreate), strs("events.k8s.io"), strs("v1"), strs("events"), "")}}, "x")
	if got := lookup(plain, admission.Create, eventGVR); got != nil {
		t.Errorf("no table: %v", got)
	}
}

func TestSelectors(t *testing.T) {
	if !SelectorForMatchResources(nil).All || !SelectorForMatchResources(&admissionregistrationv1.MatchResources{}).All || !SelectorForPolicy(nil).All {
		t.Error("missing resourceRules must select everything")
	}
	p := &admissionregistrationv1.MutatingAdmissionPolicy{Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{MatchConstraints: &admissionregistrationv1.MatchResources{
		ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{ResourceNames: strs("a"), RuleWithOperations: podsCreate}},
	}}}
	if s := SelectorForPolicy(p); s.All || !reflect.DeepEqual(s.Rules, []admissionregistrationv1.RuleWithOperations{podsCreate}) {
		t.Errorf("policy selector: %+v", s)
	}
	if s := SelectorForWebhook(nil); s.All || s.Rules != nil {
		t.Errorf("nil webhook selector: %+v", s)
	}
}

// randomRequest draws a request over the table's resources (plus unknown ones), with random
// namespaces, names and labels.
func randomRequest(rng *rand.Rand, resources []Resource) *Attributes {
	opsPool := []admission.Operation{admission.Create, admission.Update, admission.Delete, admission.Connect}
	a := &Attributes{Operation: opsPool[rng.Intn(len(opsPool))]}
	var r Resource
	if rng.Intn(10) == 0 {
		r = Resource{Group: "unknown.example.com", Version: "v1", Resource: "things", Kind: "Thing", Namespaced: true}
	} else {
		r = resources[rng.Intn(len(resources))]
	}
	a.Resource, a.Kind = r.GroupVersionResource(), r.GroupVersionKind()
	if len(r.Subresources) > 0 && rng.Intn(3) == 0 {
		s := r.Subresources[rng.Intn(len(r.Subresources))]
		a.Subresource, a.Kind = s.Name, s.Kind
	}
	if r.Namespaced {
		a.Namespace = []string{"default", "dev", "kube-system", "ghost"}[rng.Intn(4)]
	}
	a.Name = []string{"web", "db", "w", ""}[rng.Intn(4)]
	if r.Resource == "namespaces" && a.Operation != admission.Create {
		a.Namespace = []string{"default", "dev", "ghost"}[rng.Intn(3)]
	}
	obj := func() *unstructured.Unstructured {
		if rng.Intn(4) == 0 {
			return nil
		}
		u := &unstructured.Unstructured{Object: map[string]any{}}
		u.SetGroupVersionKind(a.Kind)
		u.SetName(a.Name)
		u.SetLabels([]map[string]string{nil, {"app": "web"}, {"app": "old"}, {"env": "prod", "team": "a"}}[rng.Intn(4)])
		return u
	}
	if a.Operation != admission.Delete {
		a.Object = obj()
	}
	if a.Operation == admission.Update || a.Operation == admission.Delete {
		a.OldObject = obj()
	}
	return a
}

type indexed struct {
	id int
	mr *admissionregistrationv1.MatchResources
	wh *admissionregistrationv1.MutatingWebhook
}

// TestIndexNeverChangesAResult checks, on random criteria and requests, that every entry the
// index leaves out neither matches nor fails, for policies and for webhooks.
func TestIndexNeverChangesAResult(t *testing.T) {
	tb := testTable(t)
	m := NewMatcher(testNamespaceGetter(), tb)
	resources := tb.Resources()
	rng := rand.New(rand.NewSource(42))
	ctx := context.Background()

	policies := NewIndex[indexed](tb)
	webhooks := NewIndex[indexed](tb)
	for i := 0; i < 300; i++ {
		mr := randomCriteria(rng)
		if rng.Intn(20) == 0 {
			mr.ResourceRules = nil
		}
		policies.Add(SelectorForMatchResources(mr), indexed{id: i, mr: mr})
		wh := &admissionregistrationv1.MutatingWebhook{NamespaceSelector: mr.NamespaceSelector, ObjectSelector: mr.ObjectSelector, MatchPolicy: mr.MatchPolicy}
		for _, r := range mr.ResourceRules {
			wh.Rules = append(wh.Rules, r.RuleWithOperations)
		}
		webhooks.Add(SelectorForWebhook(wh), indexed{id: i, wh: wh})
	}

	type res struct {
		id  int
		out outcome
	}
	evaluate := func(visit func(func(indexed) bool), a *Attributes, policy bool) []res {
		var out []res
		visit(func(e indexed) bool {
			var o outcome
			if policy {
				o = ourOutcome(m.MatchResources(ctx, a, e.mr))
			} else {
				o = ourOutcome(m.MutatingWebhookMatches(ctx, a, e.wh))
			}
			if o != (outcome{}) {
				out = append(out, res{e.id, o})
			}
			return true
		})
		return out
	}
	hits, candidates, total := 0, 0, 0
	requests := valuetest.Sweep(600, 100) // make test-long: the full sweep
	for i := 0; i < requests; i++ {
		a := randomRequest(rng, resources)
		for _, policy := range []bool{true, false} {
			ix := webhooks
			if policy {
				ix = policies
			}
			brute := evaluate(ix.All, a, policy)
			fast := evaluate(func(y func(indexed) bool) { ix.Lookup(a.Operation, a.Resource, y) }, a, policy)
			if !reflect.DeepEqual(brute, fast) {
				t.Fatalf("request %d (%s %v/%s, policy=%v):\nbrute %v\nindex %v", i, a.Operation, a.Resource, a.Subresource, policy, brute, fast)
			}
			hits += len(brute)
			ix.Lookup(a.Operation, a.Resource, func(indexed) bool { candidates++; return true })
			total += ix.Len()
		}
	}
	if hits == 0 {
		t.Fatal("no request matched anything")
	}
	t.Logf("%d non-empty outcomes; index visited %d of %d entries", hits, candidates, total)
}

func noMatchIndex(n int) *Index[int] {
	tb := DefaultTable()
	ix := NewIndex[int](tb)
	resources := tb.Resources()
	rng := rand.New(rand.NewSource(int64(n)))
	for i := 0; i < n; i++ {
		r := resources[rng.Intn(len(resources))]
		if r.Resource == "configmaps" {
			r.Resource = "secrets"
		}
		ix.Add(Selector{Rules: []admissionregistrationv1.RuleWithOperations{
			rule(ops(opCreate, opUpdate), strs(r.Group), strs(r.Version), strs(r.Resource, r.Resource+"/status"), ""),
		}}, i)
	}
	return ix
}

var configMapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

func TestIndexNoMatchDoesNotAllocate(t *testing.T) {
	ix := noMatchIndex(1000)
	found := 0
	yield := func(int) bool { found++; return true }
	allocs := testing.AllocsPerRun(1000, func() { ix.Lookup(admission.Create, configMapsGVR, yield) })
	if allocs != 0 || found != 0 {
		t.Errorf("%v allocations, %d candidates", allocs, found)
	}
	// An equivalent resource (events) is looked up without allocating too.
	allocs = testing.AllocsPerRun(1000, func() { ix.Lookup(admission.Create, eventGVR, yield) })
	if allocs != 0 {
		t.Errorf("%v allocations with equivalents", allocs)
	}
}

func BenchmarkIndexNoMatch(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			ix := noMatchIndex(n)
			found := 0
			yield := func(int) bool { found++; return true }
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				ix.Lookup(admission.Create, configMapsGVR, yield)
			}
			if found != 0 {
				b.Fatalf("%d candidates", found)
			}
		})
	}
}

func BenchmarkIndexMatch(b *testing.B) {
	ix := noMatchIndex(1000)
	ix.Add(Selector{Rules: []admissionregistrationv1.RuleWithOperations{podsCreate}}, -1)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ix.Lookup(admission.Create, podGVR, func(int) bool { return true })
	}
}

func BenchmarkMatchResources(b *testing.B) {
	m := NewMatcher(testNamespaceGetter(), DefaultTable())
	a := testRequests(b).podCreate
	mr := &admissionregistrationv1.MatchResources{NamespaceSelector: selector("env=prod"), ObjectSelector: &metav1.LabelSelector{},
		ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: podsCreate}}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if r, err := m.MatchResources(context.Background(), a, mr); err != nil || !r.Matches {
			b.Fatal(r, err)
		}
	}
}

func TestIndexConcurrentUse(t *testing.T) {
	ix := NewIndex[int](DefaultTable())
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				id := ix.Add(Selector{Rules: []admissionregistrationv1.RuleWithOperations{podsCreate}}, i)
				if i%2 == 0 {
					ix.Remove(id)
				}
			}
		}()
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				prev := -1
				ix.Lookup(admission.Create, podGVR, func(int) bool { return true })
				ix.All(func(v int) bool { _ = prev; prev = v; return true })
			}
		}()
	}
	wg.Wait()
	if ix.Len() != 400 {
		t.Errorf("Len = %d, want 400", ix.Len())
	}
}

// TestLookupIsLookupMerged holds Lookup, which remembers its answers, to
// lookupMerged, which merges the buckets every time, over random indexes
// and requests, with entries added and removed and CRDs added to and
// removed from the table between lookups, and yields that stop early.
func TestLookupIsLookupMerged(t *testing.T) {
	tb := testTable(t)
	gadgets := widgetsCRD.DeepCopy()
	gadgets.Name, gadgets.Spec.Names.Plural, gadgets.Spec.Names.Kind = "gadgets.example.com", "gadgets", "Gadget"
	rng := rand.New(rand.NewSource(29))
	ix := NewIndex[int](tb)
	var ids []EntryID
	add := func(p int) {
		mr := randomCriteria(rng)
		if rng.Intn(20) == 0 {
			mr.ResourceRules = nil
		}
		ids = append(ids, ix.Add(SelectorForMatchResources(mr), p))
	}
	for p := range 200 {
		add(p)
	}
	merged := func(a *Attributes) []int {
		var out []int
		ix.lookupMerged(a.Operation, a.Resource, func(p int) bool { out = append(out, p); return true })
		return out
	}
	hasGadgets, remembered := false, 0
	for i := range valuetest.Sweep(4000, 800) {
		switch rng.Intn(60) {
		case 0:
			add(1000 + i)
		case 1:
			k := rng.Intn(len(ids))
			ix.Remove(ids[k])
			ids = append(ids[:k], ids[k+1:]...)
		case 2:
			if hasGadgets {
				tb.RemoveCRD(gadgets.Name)
			} else if err := tb.AddCRD(gadgets); err != nil {
				t.Fatal(err)
			}
			hasGadgets = !hasGadgets
		}
		// Most requests for a few resources (answers remembered), some for
		// any.
		resources := tb.Resources()
		if rng.Intn(4) != 0 {
			resources = resources[:8]
		}
		a := randomRequest(rng, resources)
		if m := ix.memo.Load(); m != nil {
			if lm := (*m)[lookupKey{a.Operation, a.Resource.GroupResource()}]; lm != nil && lm.version == ix.version.Load() && lm.generation == tb.changes() {
				remembered++
			}
		}
		want := merged(a)
		if got := lookup(ix, a.Operation, a.Resource); !slices.Equal(got, want) {
			t.Fatalf("lookup %d (%s %v): Lookup %v, lookupMerged %v", i, a.Operation, a.Resource, got, want)
		}
		stop := rng.Intn(len(want) + 1)
		var got []int
		ix.Lookup(a.Operation, a.Resource, func(p int) bool { got = append(got, p); return len(got) < stop })
		if stop == 0 && len(want) > 0 {
			stop = 1
		}
		if !slices.Equal(got, want[:stop]) {
			t.Fatalf("lookup %d (%s %v) stopped after %d: Lookup %v, lookupMerged %v", i, a.Operation, a.Resource, stop, got, want)
		}
	}
	if remembered == 0 {
		t.Fatal("no answer was remembered")
	}
	t.Logf("%d lookups answered from the memo", remembered)
}

// TestLookupForgetsOnChanges: an entry added or removed, or a change of
// the table, is seen by the next Lookup of a remembered answer.
func TestLookupForgetsOnChanges(t *testing.T) {
	tb := testTable(t)
	ix := NewIndex[int](tb)
	ix.Add(Selector{Rules: []admissionregistrationv1.RuleWithOperations{podsCreate}}, 1)
	if got := lookup(ix, admission.Create, podGVR); !slices.Equal(got, []int{1}) {
		t.Fatalf("got %v", got)
	}
	id := ix.Add(Selector{All: true}, 2)
	if got := lookup(ix, admission.Create, podGVR); !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("after Add: got %v", got)
	}
	ix.Remove(id)
	if got := lookup(ix, admission.Create, podGVR); !slices.Equal(got, []int{1}) {
		t.Fatalf("after Remove: got %v", got)
	}
	before := tb.changes()
	tb.RemoveCRD(widgetsCRD.Name)
	if tb.changes() == before {
		t.Fatal("RemoveCRD did not change the table's generation")
	}
	before = tb.changes()
	if err := tb.AddCRD(widgetsCRD); err != nil {
		t.Fatal(err)
	}
	if tb.changes() == before {
		t.Fatal("AddCRD did not change the table's generation")
	}
}
