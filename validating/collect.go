package validating

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mutatis-dev/mutatis/params"
)

// A binding's params by selector are, request after request, most often
// the same objects: a Source never changes an object it returned (a
// changed param is a new object, params.Source). What params.CollectRef
// answers for them (params.Collector.Present: sorted by namespace/name,
// each presented) and what the policy binds of each (Hook.paramOf)
// depend on those objects alone, so a binding remembers its last
// collection and answers a request that finds the same objects (the same
// pointers, in any order, each as often) with it; any other find, or an
// error, is collected anew. TestCollectionsAreCollects holds it to
// CollectRef and paramOf over params added, replaced and removed.

// maxRememberedParams bounds the collections remembered: one that finds
// more params is presented on every request (comparing a find with the
// remembered one is quadratic in their number).
const maxRememberedParams = 64

// collection is a binding's params as CollectRef answers them, with what
// the policy binds of each.
type collection struct {
	gvk    schema.GroupVersionKind
	params []params.Param
	// bound is, by param, what the policy binds of it (paramOf) and its
	// record's key (namespace/name).
	bound []boundParam
}

// collect is binding j of h's params for a request in namespace: the
// binding's last collection when the Source finds the same param objects,
// or a new one, remembered when it is small enough. The paramKind and
// paramRef are bound (params.Bound).
func (e *Evaluator) collect(ctx context.Context, h *Hook, j int, namespace string) (*collection, error) {
	found, gvk, err := e.cfg.Params.FindRef(ctx, h.Policy.Spec.ParamKind, h.refs[j], namespace)
	if err != nil {
		return nil, err
	}
	slot := &h.collections[j]
	if c := slot.Load(); c != nil && c.gvk == gvk && c.holds(found) {
		return c, nil
	}
	ps, err := e.cfg.Params.Present(gvk, found)
	if err != nil {
		return nil, err
	}
	c := &collection{gvk: gvk, params: ps, bound: make([]boundParam, len(ps))}
	for i, p := range ps {
		b := &c.bound[i]
		b.params, b.value, b.results = h.paramOf(p)
		b.key = p.Namespace + "/" + p.Name
	}
	if len(ps) <= maxRememberedParams {
		slot.Store(c)
	}
	return c, nil
}

// holds tells whether found are c's param objects: the same objects, each
// as often, in any order.
func (c *collection) holds(found []*unstructured.Unstructured) bool {
	if len(found) != len(c.params) || len(found) > maxRememberedParams {
		return false
	}
	var used [maxRememberedParams]bool
	for _, o := range found {
		matched := false
		for k := range c.params {
			if !used[k] && c.params[k].Source == o {
				used[k], matched = true, true
				break
			}
		}
		if !matched {
			return false
		}
	}
	return true
}
