package compiler

import (
	"sync"

	"k8s.io/apiserver/pkg/cel/common"
	"k8s.io/apiserver/pkg/cel/mutation"
)

// maxObjectTypes bounds the types one objectTypes keeps: the names are
// those the compiled expressions spell (Object, Object.spec.containers,
// JSONPatch, …), a few per policy; past the bound a name is resolved as
// upstream resolves it, every time.
const maxObjectTypes = 4096

// objectTypes is upstream's mutation.DynamicTypeResolver, each type it
// resolves kept by name. cel-go asks the resolver for the type of every
// `Object.<path>{…}` and `JSONPatch{…}` each time an evaluation builds
// one (the type provider's NewValue), and upstream's builds the type anew
// each time (dynamic.NewObjectType, types.NewObjectType). The types are
// immutable and depend on the name alone (a dynamic Object type has no
// declared fields: every field name is allowed and of type dyn), so one
// per name serves every expression and evaluation: values built from it
// are the values built from a fresh one (TestObjectTypesAreUpstreams).
// Safe for concurrent use; a Compiler's environments share one.
type objectTypes struct {
	upstream mutation.DynamicTypeResolver

	mu    sync.RWMutex
	types map[string]common.ResolvedType
}

var _ common.TypeResolver = (*objectTypes)(nil)

// Resolve implements common.TypeResolver.
func (r *objectTypes) Resolve(name string) (common.ResolvedType, bool) {
	r.mu.RLock()
	t, ok := r.types[name]
	r.mu.RUnlock()
	if ok {
		return t, true
	}
	t, ok = r.upstream.Resolve(name)
	if !ok {
		return nil, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if kept, ok := r.types[name]; ok {
		return kept, true
	}
	if len(r.types) < maxObjectTypes {
		if r.types == nil {
			r.types = map[string]common.ResolvedType{}
		}
		r.types[name] = t
	}
	return t, true
}
