package matching

import (
	"cmp"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
)

// Selector says which requests an index entry may match: the (operation, group, resource)
// combinations its rules name. It is a necessary condition only; the Matcher decides.
type Selector struct {
	// All makes the entry a candidate for every request (e.g. a policy without resourceRules,
	// or criteria the index cannot read).
	All bool
	// Rules are the rules whose operations, apiGroups and resources (subresources are
	// ignored) select requests. Versions, scope and names are left to the Matcher.
	Rules []admissionregistrationv1.RuleWithOperations
}

// SelectorForMatchResources returns the selector of a policy's matchConstraints or a binding's
// matchResources: its resourceRules, or everything when there are none or mr is nil (nil
// constraints must still reach the Matcher, which reports them).
func SelectorForMatchResources(mr *admissionregistrationv1.MatchResources) Selector {
	if mr == nil || len(mr.ResourceRules) == 0 {
		return Selector{All: true}
	}
	rules := make([]admissionregistrationv1.RuleWithOperations, len(mr.ResourceRules))
	for i := range mr.ResourceRules {
		rules[i] = mr.ResourceRules[i].RuleWithOperations
	}
	return Selector{Rules: rules}
}

// SelectorForPolicy returns the selector of a MutatingAdmissionPolicy's matchConstraints.
func SelectorForPolicy(p *admissionregistrationv1.MutatingAdmissionPolicy) Selector {
	if p == nil {
		return Selector{All: true}
	}
	return SelectorForMatchResources(p.Spec.MatchConstraints)
}

// SelectorForWebhook returns the selector of a mutating webhook: its rules (a webhook without
// rules matches nothing).
func SelectorForWebhook(w *admissionregistrationv1.MutatingWebhook) Selector {
	if w == nil {
		return Selector{}
	}
	return Selector{Rules: w.Rules}
}

// EntryID identifies an entry of an Index.
type EntryID uint64

type indexKey struct {
	group, resource string
	op              admission.Operation
}

type indexEntry[T any] struct {
	id      EntryID
	payload T
	keys    []indexKey
}

// wildcard stands for "*" in index keys.
const wildcard = "*"

// maxCursors bounds the buckets merged without allocating: 8 per equivalent group/resource.
const maxCursors = 64

// Index holds entries keyed by (group, resource, operation) so that a request only visits the
// entries whose rules can name it. Wildcards live in their own buckets, so a request that no
// entry names costs a fixed number of map lookups whatever the number of entries, and no
// allocation. Candidates come back once each, in the order they were added. Index is safe for
// concurrent use. The zero value is not usable; use NewIndex.
type Index[T any] struct {
	mu      sync.RWMutex
	table   *Table
	nextID  EntryID
	entries map[EntryID]*indexEntry[T]
	buckets map[indexKey][]*indexEntry[T]
	// version counts the changes of the entries (Add, Remove).
	version atomic.Uint64
	// memo remembers Lookup's answers by operation and group/resource
	// (lookupMemo), read without a lock: a map never written once
	// published, replaced by a copy with one more answer.
	memo atomic.Pointer[map[lookupKey]*lookupMemo[T]]
}

// lookupKey is what of a request Lookup's answer depends on.
type lookupKey struct {
	op admission.Operation
	gr schema.GroupResource
}

// lookupMemo is Lookup's answer for a lookupKey (the payloads it yields,
// in order), computed from the index at version and the table at
// generation: current while both are.
type lookupMemo[T any] struct {
	version, generation uint64
	payloads            []T
}

// maxLookupMemo bounds the answers an Index remembers (the operations and
// resources of the requests it sees; those beyond are merged every time).
const maxLookupMemo = 256

// NewIndex returns an empty index. table gives the equivalent resources of a request, so that
// entries with matchPolicy Equivalent stay candidates for them; it may be nil.
func NewIndex[T any](table *Table) *Index[T] {
	return &Index[T]{
		table:   table,
		entries: map[EntryID]*indexEntry[T]{},
		buckets: map[indexKey][]*indexEntry[T]{},
	}
}

// Len returns the number of entries.
func (ix *Index[T]) Len() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return len(ix.entries)
}

// Add adds an entry and returns its id.
func (ix *Index[T]) Add(sel Selector, payload T) EntryID {
	keys := selectorKeys(sel)
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.version.Add(1)
	ix.memo.Store(nil)
	ix.nextID++
	e := &indexEntry[T]{id: ix.nextID, payload: payload, keys: keys}
	ix.entries[e.id] = e
	for _, k := range keys {
		ix.buckets[k] = append(ix.buckets[k], e)
	}
	return e.id
}

// Remove removes an entry; unknown ids are ignored.
func (ix *Index[T]) Remove(id EntryID) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	e, ok := ix.entries[id]
	if !ok {
		return
	}
	ix.version.Add(1)
	ix.memo.Store(nil)
	delete(ix.entries, id)
	for _, k := range e.keys {
		b := ix.buckets[k]
		next := make([]*indexEntry[T], 0, len(b))
		for _, x := range b {
			if x != e {
				next = append(next, x)
			}
		}
		if len(next) == 0 {
			delete(ix.buckets, k)
		} else {
			ix.buckets[k] = next
		}
	}
}

func selectorKeys(sel Selector) []indexKey {
	set := map[indexKey]bool{}
	if sel.All {
		set[indexKey{wildcard, wildcard, wildcard}] = true
	} else {
		for _, r := range sel.Rules {
			for _, op := range r.Operations {
				for _, g := range r.APIGroups {
					for _, res := range r.Resources {
						res, _ = splitResource(res)
						set[indexKey{group: g, resource: res, op: admission.Operation(op)}] = true
					}
				}
			}
		}
	}
	keys := make([]indexKey, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b indexKey) int {
		return cmp.Or(cmp.Compare(a.group, b.group), cmp.Compare(a.resource, b.resource), cmp.Compare(a.op, b.op))
	})
	return keys
}

// Lookup calls yield with every entry that may match a request for the operation and
// resource, once each, in the order the entries were added, until yield returns false. yield
// must not modify the index. The answer for an operation and group/resource is remembered
// until the index or its table changes (lookupMerged is the reference:
// TestLookupIsLookupMerged).
func (ix *Index[T]) Lookup(op admission.Operation, resource schema.GroupVersionResource, yield func(T) bool) {
	key := lookupKey{op: op, gr: resource.GroupResource()}
	// The table's generation before anything is read of it: an answer
	// computed across a change is remembered as of before it, so never
	// used.
	generation := ix.table.changes()
	if m := ix.memo.Load(); m != nil {
		if lm := (*m)[key]; lm != nil && lm.generation == generation && lm.version == ix.version.Load() {
			for _, p := range lm.payloads {
				if !yield(p) {
					return
				}
			}
			return
		}
	}
	var payloads []T
	remember := true
	if m := ix.memo.Load(); m != nil && len(*m) >= maxLookupMemo {
		remember = false
	}
	version := ix.lookupMerged(op, resource, func(p T) bool {
		if remember {
			payloads = append(payloads, p)
			return true
		}
		return yield(p)
	})
	if !remember {
		return
	}
	ix.rememberLookup(key, &lookupMemo[T]{version: version, generation: generation, payloads: payloads})
	for _, p := range payloads {
		if !yield(p) {
			return
		}
	}
}

// rememberLookup publishes a copy of the memo with lm for key (unless
// another Lookup published one meanwhile: the answer is then not kept).
func (ix *Index[T]) rememberLookup(key lookupKey, lm *lookupMemo[T]) {
	old := ix.memo.Load()
	next := make(map[lookupKey]*lookupMemo[T], 1+lenMemo(old))
	if old != nil {
		for k, v := range *old {
			next[k] = v
		}
	}
	next[key] = lm
	ix.memo.CompareAndSwap(old, &next)
}

// lenMemo is the number of answers in m.
func lenMemo[T any](m *map[lookupKey]*lookupMemo[T]) int {
	if m == nil {
		return 0
	}
	return len(*m)
}

// lookupMerged is Lookup without its memo: the buckets of the operation,
// the request's group/resource, their equivalents and the wildcards
// merged. It returns the index's version it read them at.
func (ix *Index[T]) lookupMerged(op admission.Operation, resource schema.GroupVersionResource, yield func(T) bool) uint64 {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	version := ix.version.Load()

	var stack [maxCursors][]*indexEntry[T]
	cursors := stack[:0]
	add := func(gr schema.GroupResource) {
		for _, g := range [2]string{gr.Group, wildcard} {
			for _, r := range [2]string{gr.Resource, wildcard} {
				for _, o := range [2]admission.Operation{op, wildcard} {
					if b := ix.buckets[indexKey{g, r, o}]; len(b) > 0 {
						cursors = append(cursors, b)
					}
				}
			}
		}
	}
	gr := resource.GroupResource()
	add(gr)
	// Entries matching through an equivalent resource are found under its group/resource.
	for _, eq := range ix.table.equivalentGroupResources(gr) {
		if eq != gr {
			add(eq)
		}
	}
	if len(cursors) == 0 {
		return version
	}
	// Merge the buckets (each ordered by id) and skip duplicates.
	var last EntryID
	for {
		best := -1
		for i, c := range cursors {
			if len(c) == 0 {
				continue
			}
			if best < 0 || c[0].id < cursors[best][0].id {
				best = i
			}
		}
		if best < 0 {
			return version
		}
		e := cursors[best][0]
		cursors[best] = cursors[best][1:]
		if e.id == last {
			continue
		}
		last = e.id
		if !yield(e.payload) {
			return version
		}
	}
}

// All calls yield with every entry in the order they were added, until yield returns false.
// It is the brute-force path Lookup must agree with.
func (ix *Index[T]) All(yield func(T) bool) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	for _, id := range slices.Sorted(maps.Keys(ix.entries)) {
		if !yield(ix.entries[id].payload) {
			return
		}
	}
}
