// Package mutation is one mutation of one MutatingAdmissionPolicy
// invocation, as kube-apiserver's dispatcher runs it (k8s.io/apiserver
// pkg/admission/plugin/policy/mutating: dispatchOne with the
// ApplyConfiguration or JSONPatch patcher of its patch package): the
// expression evaluated under its budget, the patch applied (through
// applyconfig or jsonpatch), the result in typed form and defaulted. The
// algorithm of a request (engine.Evaluator.Admit) calls it once per
// mutation, as upstream's dispatcher calls its patchers; the side-by-side
// benchmark of one mutation and the differential tests of the patchers
// hold it beside upstream's.
package mutation

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/cel-go/common/types/ref"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mutatis-dev/mutatis/applyconfig"
	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/internal/jsonvalue"
	"github.com/mutatis-dev/mutatis/jsonpatch"
	"github.com/mutatis-dev/mutatis/matching"
	"github.com/mutatis-dev/mutatis/scheme"
)

// Patcher applies one compiled mutation to an object, as kube-apiserver's
// MutatingAdmissionPolicy dispatcher does for one mutation of one policy
// invocation (dispatchOne with the ApplyConfiguration or JSONPatch patcher).
// A Patcher is safe for concurrent use.
type Patcher struct {
	// Schemas gives the type converter of the object's kind.
	Schemas *applyconfig.Schemas
	// Scheme knows the built-in (typed) kinds; objects of those kinds are
	// presented in their typed form after every mutation, as kube-apiserver
	// holds them typed, and defaulted. Nil knows none
	// (scheme.Scheme.Recognizes).
	Scheme *scheme.Scheme
	// SkipDefaulting leaves the result of a mutation undefaulted (the
	// dispatcher defaults it before the next mutation): for users who want
	// objects evaluated exactly as written.
	SkipDefaulting bool
}

// Cache is what one admission keeps from a mutation for the next ones of
// the same object, opaque to its holder (the engine keeps one per request,
// in its state across the chain's rounds): the typed value of the last
// ApplyConfiguration result, which the next merge into that same object
// reuses (applyconfig.Merger.MergeOwned), and the scheme's cache, which
// normalizes a merge result walking only what the patch changed. The zero
// value is an admission's, before its first mutation. It is for one
// request at a time.
type Cache struct {
	// standalone tells that the mutated object is not known to be in
	// typed form (Patcher.Mutate's): nothing is reused. Within an
	// admission it is (the request's object as NormalizeRequest presents
	// it, then the results of mutations).
	standalone bool
	merged     *applyconfig.Merged
	typed      scheme.Cache
	// defaulted is the last result of a mutation of the admission, as
	// defaulting left it (of kind defaultedKind): when the next mutation
	// starts from it, only what that mutation changed can need defaulting
	// (scheme.Scheme.DefaultFrom).
	defaulted     map[string]any
	defaultedKind schema.GroupVersionKind
	// fixed is the last JSON patch result of the admission that the strict
	// decode returned as it is: the next one's decode walks only what
	// differs from it (scheme.Scheme.PatchFrom).
	fixed scheme.Fixed
	// kind is the admission's last built-in kind and its Merger
	// (schemaOf).
	kind kindSchema
	// live is the live object of the admission's ApplyConfiguration
	// merges, made by the first and used again by the next ones rather
	// than made for each: the merge reads it and keeps no reference to it
	// (its result and typed values hold maps, never the Unstructured), and
	// merge empties it again. (A pointer, not a value, so that a
	// standalone Cache stays on its caller's stack.)
	live *unstructured.Unstructured
	// ops is the slice of the last JSON patch's operations, emptied
	// (keepOps), which the next one's are converted into
	// (jsonpatch.AppendFromCEL): nothing holds it once the patch is
	// applied.
	ops []jsonpatch.Operation
}

// keepOps keeps ops' slice for the next JSON patch of the admission,
// cleared (its operations' values are the patch result's), unless the
// Cache is standalone or the slice is large.
func (c *Cache) keepOps(ops []jsonpatch.Operation) {
	clear(ops)
	if c.standalone || cap(ops) > maxKeptOps {
		return
	}
	c.ops = ops[:0]
}

// opsRoom is the slice the next JSON patch's operations are converted
// into: the last one's, or within an admission room for a few, so that
// a later patch of more operations than the first rarely grows it.
func (c *Cache) opsRoom() []jsonpatch.Operation {
	if c.ops == nil && !c.standalone {
		c.ops = make([]jsonpatch.Operation, 0, minKeptOps)
	}
	return c.ops
}

// minKeptOps and maxKeptOps bound the slice of operations a Cache keeps.
const (
	minKeptOps = 8
	maxKeptOps = 256
)

// defaults is pt.defaults of out, the result of a mutation of in (of kind
// gvk), in normalized form when normalized is set (a result of
// scheme.Scheme.Normalize or Patch: scheme.Scheme.DefaultNormalized).
// Within an admission, when in is the defaulted result of the previous
// mutation, the defaulters run only if the mutation changed what they can
// see (scheme.Scheme.DefaultFrom, held equal to scheme.Scheme.Default by
// its tests); when out is the result of the JSON patch ops applied to in
// (ops not nil), only the fields their paths name are compared
// (scheme.Scheme.DefaultPatched).
func (c *Cache) defaults(pt *Patcher, out, in map[string]any, gvk schema.GroupVersionKind, normalized bool, ops []jsonpatch.Operation) (map[string]any, error) {
	if pt.SkipDefaulting || c.standalone {
		return pt.defaults(out, gvk, normalized)
	}
	var err error
	switch {
	case c.defaulted != nil && c.defaultedKind == gvk && jsonvalue.SameMap(in, c.defaulted) && ops != nil:
		out, err = pt.Scheme.DefaultPatched(out, in, ops, gvk)
	case c.defaulted != nil && c.defaultedKind == gvk && jsonvalue.SameMap(in, c.defaulted):
		out, err = pt.Scheme.DefaultFrom(out, in, gvk)
	case normalized:
		out, err = pt.Scheme.DefaultNormalized(out, gvk)
	default:
		out, err = pt.Scheme.Default(out, gvk)
	}
	if err != nil {
		return nil, defaultingError(gvk, err)
	}
	c.defaulted, c.defaultedKind = out, gvk
	return out, nil
}

// patch applies ops to in (of kind gvk) as pt's patcher does and defaults
// the result (c.defaults). Where defaulting is of the whole object, both
// are scheme.Scheme.PatchDefault, which walks the object once for the
// strict decode and the typed object the defaulters run on.
func (c *Cache) patch(pt *Patcher, in map[string]any, ops []jsonpatch.Operation, gvk schema.GroupVersionKind) (map[string]any, bool, error) {
	var fixed *scheme.Fixed
	if !c.standalone {
		fixed = &c.fixed
	}
	incremental := !c.standalone && c.defaulted != nil && c.defaultedKind == gvk && jsonvalue.SameMap(in, c.defaulted)
	if pt.SkipDefaulting || pt.Scheme == nil || incremental {
		out, skipped, err := pt.Scheme.PatchFrom(fixed, in, ops, gvk) // a nil Scheme decodes with client-go's
		if err == nil {
			// dispatchOne defaults whatever the patcher returns, the object
			// a failed "test" left unchanged included (in, not necessarily
			// in normalized form outside an admission).
			told := ops // what out can differ from in by
			if skipped {
				told = nil // out is in
			}
			out, err = c.defaults(pt, out, in, gvk, !skipped, told)
		}
		return out, skipped, err
	}
	// c.defaults' DefaultNormalized of the patch result, or Default of in
	// when a "test" skipped it.
	out, skipped, err := pt.Scheme.PatchDefaultFrom(fixed, in, ops, gvk)
	if err != nil {
		return nil, skipped, patchDefaultError(gvk, err)
	}
	if !c.standalone {
		c.defaulted, c.defaultedKind = out, gvk
	}
	return out, skipped, nil
}

// patchDefaultError is the error of PatchDefault or NormalizeDefault: the
// patch's or the normalization's as it is, a defaulting error as
// c.defaults reports it. (Apart, so that the target errors.As escapes only
// when there is an error.)
func patchDefaultError(gvk schema.GroupVersionKind, err error) error {
	var failed *scheme.DefaultError
	if errors.As(err, &failed) {
		return defaultingError(gvk, failed.Err)
	}
	return err
}

// merge merges patch into live, the object's content, with merger,
// reusing the last merge's typed value within an admission. patch is taken over
// (applyconfig.Merger.MergeOwned): it is the caller's, freshly built by
// applyconfig.FromCELFresh, and not used after the merge; when fresh, all
// of it (applyconfig.Merger.MergeFresh).
func (c *Cache) merge(merger *applyconfig.Merger, live map[string]any, patch map[string]any, fresh bool) (*applyconfig.Merged, error) {
	u, prev := c.liveOf(live)
	defer func() { u.Object = nil }() // not held past the merge
	if fresh {
		return merger.MergeFresh(u, patch, prev)
	}
	return merger.MergeOwned(u, patch, prev)
}

// liveOf is live in the Cache's Unstructured, which the caller empties
// after its merge, and the Merged that merge chains from (nil when
// standalone).
func (c *Cache) liveOf(live map[string]any) (u *unstructured.Unstructured, prev *applyconfig.Merged) {
	if !c.standalone {
		prev = c.merged
	}
	if c.live == nil {
		c.live = new(unstructured.Unstructured)
	}
	c.live.Object = live
	return c.live, prev
}

// mergeObject is c.merge of the patch applyconfig.FromCELFresh makes of
// v, the value of an ApplyConfiguration, merged without building it
// (applyconfig.Merger.MergeObject); nil where that merge does not model
// it, and the caller runs mergeValue, the reference.
func (c *Cache) mergeObject(merger *applyconfig.Merger, live map[string]any, v ref.Val) *applyconfig.Merged {
	u, prev := c.liveOf(live)
	defer func() { u.Object = nil }() // not held past the merge
	merged, ok := merger.MergeObject(u, v, prev)
	if !ok {
		return nil
	}
	return merged
}

// mergeValue merges v, the value of an ApplyConfiguration, into live, an
// object of kind gvk, with merger (nil when the kind has none) as
// kube-apiserver does: the value converted (applyconfig.FromCELFresh),
// the kind's type converter checked, the patch merged (c.merge). defined
// and builtin are pt.schemaOf's.
func (c *Cache) mergeValue(pt *Patcher, merger *applyconfig.Merger, live map[string]any, v ref.Val, gvk schema.GroupVersionKind, defined, builtin bool) (*applyconfig.Merged, error) {
	patch, fresh, err := applyconfig.FromCELFresh(v)
	if err != nil {
		return nil, err
	}
	if builtin && !defined {
		// kube-apiserver's type converter for a built-in group/version
		// is built from that group/version's OpenAPI document
		// (patch.typeConverterManager), which lacks the kinds of
		// subresources served by other groups (autoscaling/v1 Scale):
		// ApplyStructuredMergeDiff cannot type the patch.
		return nil, fmt.Errorf("error applying patch: failed to convert patch object to typed object: no corresponding type for %v", gvk)
	}
	if merger == nil {
		// Known gap (docs/fidelity.md): kube-apiserver's document
		// defines the kind, client-go's embedded schema does not.
		return nil, apierrors.NewInternalError(fmt.Errorf("mutatis has no schema of %v to merge an ApplyConfiguration with", gvk))
	}
	// patch is FromCEL's, the caller's own: the merge takes it over.
	return c.merge(merger, live, patch, fresh) // errors carry upstream's "error applying patch: " prefix
}

// normalize presents merged, the result of merging a patch into in (of
// kind gvk), in typed form with pt's scheme: within an admission in is in
// typed form, and only what the patch changed is walked.
func (c *Cache) normalize(pt *Patcher, merged, in map[string]any, gvk schema.GroupVersionKind) (map[string]any, error) {
	if c.standalone {
		return pt.Scheme.Normalize(merged, gvk)
	}
	c.typed.From(in)
	return c.typed.Normalize(pt.Scheme, merged, gvk)
}

// keep keeps merged for the next merge when out, the mutation's result,
// is its object (normalizing and defaulting changed nothing: the typed
// value is out's). When only defaulting changed it (normalized, the
// normalization of merged's object, is that object) and structural is the
// custom resource's schema it was defaulted with, out is kept in its
// place as the merger's Defaulted result: known valid, when the merger
// can tell, so that the next merge into it does not validate it again.
// Otherwise merged is kept when it is known valid (KnownValid): out, and
// what the next mutations make of it, share with merged all that
// normalizing and defaulting left alone, and the next merge validates its
// live object beside merged (applyconfig's validBeside), walking only
// what differs — less than beside an earlier result, which lacks this
// mutation's changes too.
func (c *Cache) keep(merger *applyconfig.Merger, merged *applyconfig.Merged, normalized, out map[string]any, structural *structuralschema.Structural) {
	if c.standalone {
		return
	}
	if jsonvalue.SameMap(out, merged.Object.Object) {
		c.merged = merged
		return
	}
	if structural != nil && jsonvalue.SameMap(normalized, merged.Object.Object) {
		if d, ok := merger.Defaulted(merged, out, structural); ok {
			c.merged = d
			return
		}
	}
	if merged.KnownValid() {
		c.merged = merged
	}
}

// ownRoot tells whether root, the top-level map of a standalone merge's
// result (Patcher.Mutate: the Merged is not kept), is the mutation's own:
// the merge returns as its root the live object's (in.Object, a merge that
// changed nothing), a copy of it, the patch's own top level it took over
// (applyconfig.Merger.MergeOwned, MergeFresh: FromCELFresh's, which
// nothing else holds once the activation is released), or structured-merge-
// diff's new map. Only the first is held by the caller; the others are
// read no more but as the result (scheme.Scheme.NormalizeDefaultOwn).
// Neither the old object nor the params can be a merge's root; they are
// ruled out all the same.
func ownRoot(root map[string]any, in compiler.Input) bool {
	return root != nil && !jsonvalue.SameMap(root, in.Object) &&
		!jsonvalue.SameMap(root, in.OldObject) && !jsonvalue.SameMap(root, in.Params)
}

// structuralDefaults is the structural schema of the custom resource obj
// (of kind gvk) that defaulting applies (scheme.Scheme.StructuralDefaults),
// nil when pt does not default or obj is not a custom resource.
func (pt *Patcher) structuralDefaults(obj map[string]any, gvk schema.GroupVersionKind) *structuralschema.Structural {
	if pt.SkipDefaulting {
		return nil
	}
	return pt.Scheme.StructuralDefaults(obj, gvk)
}

// schemaOf is what the dispatcher looks up of kind gvk before patching:
// whether kube-apiserver's document of its built-in group/version defines
// it (defined; builtin tells that the group/version is built-in and
// served as such), and the Merger of its objects — nil for a JSON patch of
// a built-in kind, which does not use it, or for a built-in kind
// client-go's embedded schema lacks.
func (pt *Patcher) schemaOf(gvk schema.GroupVersionKind, jsonPatch bool) (defined, builtin bool, merger *applyconfig.Merger, err error) {
	// The dispatcher looks the type converter up before patching, for both
	// patch types. For a built-in kind the lookup cannot fail (below), and
	// a JSON patch does not use the converter: it is not built then (the
	// schemas of every built-in kind, which a one-object run would
	// otherwise decode for nothing).
	defined, builtin = matching.BuiltinSchema(gvk)
	if builtin && !defined && pt.Schemas.Serves(gvk) {
		// A CRD serves, in a built-in group/version kube-apiserver does not
		// serve, a kind its document lacks (WatchEvent, which client-go
		// registers in every built-in group/version): the type converter
		// manager finds no static type for it and takes the CRD's document,
		// served under that group/version's path.
		builtin = false
	}
	if !builtin || !jsonPatch {
		merger, err = pt.Schemas.Merger(gvk)
	}
	if err != nil && builtin {
		// kube-apiserver's type converter of a built-in group/version is
		// built from that group/version's OpenAPI document: it always
		// exists, even for a kind it lacks (autoscaling/v1 Scale, which
		// other groups' subresources borrow), or one client-go's embedded
		// schema lacks (v1 Binding).
		merger, err = nil, nil
	}
	return defined, builtin, merger, err
}

// kindSchema is what Cache.schemaOf keeps of the admission's kind: a
// built-in kind whose group/version's document defines it, and its Merger
// once looked up. Both answers depend on schemas' built-in tables only,
// which never change (not on the CRDs added to schemas: a CRD's kind in a
// built-in group/version is looked up only when the document lacks it).
type kindSchema struct {
	schemas *applyconfig.Schemas
	gvk     schema.GroupVersionKind
	merger  *applyconfig.Merger
}

// schemaOf is pt.schemaOf(gvk, jsonPatch), answered from what the
// admission's last lookup of the same built-in kind found: an admission's
// mutations are of one or two kinds (the request's and its equivalents).
// TestSchemaOfIsTheLookup holds it to pt.schemaOf.
func (c *Cache) schemaOf(pt *Patcher, gvk schema.GroupVersionKind, jsonPatch bool) (defined, builtin bool, merger *applyconfig.Merger, err error) {
	if c.standalone {
		return pt.schemaOf(gvk, jsonPatch)
	}
	k := &c.kind
	if k.schemas == nil || k.schemas != pt.Schemas || k.gvk != gvk {
		defined, builtin, merger, err = pt.schemaOf(gvk, jsonPatch)
		if defined && builtin {
			*k = kindSchema{schemas: pt.Schemas, gvk: gvk}
			k.keep(merger)
		}
		return defined, builtin, merger, err
	}
	if jsonPatch {
		return true, true, nil, nil
	}
	if k.merger == nil {
		_, _, merger, err = pt.schemaOf(gvk, false)
		k.keep(merger)
		return true, true, merger, err
	}
	return true, true, k.merger, nil
}

// keep keeps merger, the Merger k's kind was found with, when it is
// built from client-go's embedded schema (the one that never changes), not
// from a CRD's.
func (k *kindSchema) keep(merger *applyconfig.Merger) {
	if merger != nil && merger == k.schemas.BuiltinMerger(k.gvk) {
		k.merger = merger
	}
}

// Mutate evaluates mutation m of policy p against in and applies its patch
// to in.Object (of kind gvk), outside any admission: the unit that one
// call of upstream's patchers (patch.Patcher.Patch) followed by the
// dispatcher's conversion back to the typed object and defaulting
// (dispatchOne) is, and nothing else (no matching, params,
// matchConditions or reinvocation: engine.Evaluator.Admit's). It returns
// the new object content (in.Object is never modified).
//
// Errors come in two classes, as upstream: an *apierrors.StatusError ends the
// whole admission request whatever the failure policy (no schema for the
// kind, a patched object that does not decode into its type); any other error
// is an error of this policy invocation, subject to its failure policy.
func (pt *Patcher) Mutate(ctx context.Context, p *compiler.Policy, m *compiler.Expression, in compiler.Input, gvk schema.GroupVersionKind) (map[string]any, chain.MutationOutcome, error) {
	return (&Cache{standalone: true}).mutate(ctx, pt, p, m, in, gvk)
}

// Mutate is Patcher.Mutate within an admission: in.Object is the request's
// object as pt.NormalizeRequest presents it or the result of an earlier
// mutation of the admission through c, and c keeps what the next mutation
// reuses.
func (c *Cache) Mutate(ctx context.Context, pt *Patcher, p *compiler.Policy, m *compiler.Expression, in compiler.Input, gvk schema.GroupVersionKind) (map[string]any, chain.MutationOutcome, error) {
	return c.mutate(ctx, pt, p, m, in, gvk)
}

func (c *Cache) mutate(ctx context.Context, pt *Patcher, p *compiler.Policy, m *compiler.Expression, in compiler.Input, gvk schema.GroupVersionKind) (out map[string]any, outcome chain.MutationOutcome, err error) {
	start := time.Now()
	defer func() {
		outcome.Elapsed = time.Since(start)
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("internal error evaluating mutation: panic: %v", r)
		}
	}()

	defined, builtin, merger, err := c.schemaOf(pt, gvk, m.Kind == compiler.KindJSONPatch)
	if err != nil {
		return nil, outcome, err
	}
	if m.Err != nil {
		return nil, outcome, m.Err
	}
	act := p.NewActivation(ctx, in)
	// Released once the value has been converted (FromCELFresh, FromCEL)
	// and the function returns.
	defer act.Release()
	res, _, err := act.Eval(m, compiler.MutationBudget)
	outcome.Cost = res.Cost
	if err != nil {
		return nil, outcome, err
	}
	if res.Err != nil {
		return nil, outcome, res.Err
	}

	switch m.Kind {
	case compiler.KindApplyConfiguration:
		var merged *applyconfig.Merged
		if merger != nil && (defined || !builtin) {
			// The value merged as it is, where the merge models it
			// (applyconfig.Merger.MergeObject); nil otherwise.
			merged = c.mergeObject(merger, in.Object, res.Value)
		}
		if merged == nil {
			var err error
			if merged, err = c.mergeValue(pt, merger, in.Object, res.Value, gvk, defined, builtin); err != nil {
				return nil, outcome, err
			}
		}
		if c.standalone && !pt.SkipDefaulting {
			// Normalize and DefaultNormalized (c.normalize, c.defaults)
			// of the merge result, in one walk where it is in typed form
			// already; its top-level map written in place when it is
			// the mutation's own (ownRoot).
			normalizeDefault := pt.Scheme.NormalizeDefault
			if ownRoot(merged.Object.Object, in) {
				normalizeDefault = pt.Scheme.NormalizeDefaultOwn
			}
			out, err := normalizeDefault(merged.Object.Object, gvk)
			if err != nil {
				return nil, outcome, patchDefaultError(gvk, err)
			}
			return out, outcome, nil
		}
		normalized, err := c.normalize(pt, merged.Object.Object, in.Object, gvk)
		if err != nil {
			return normalized, outcome, err
		}
		// The structural schema a custom resource is defaulted with,
		// looked up before and after defaulting (the same one both
		// times: the one defaulting used).
		var structural *structuralschema.Structural
		if !builtin && !c.standalone {
			structural = pt.structuralDefaults(normalized, gvk)
		}
		out, err := c.defaults(pt, normalized, in.Object, gvk, true, nil)
		if err != nil {
			return out, outcome, err
		}
		if structural != nil && (jsonvalue.SameMap(out, normalized) || structural != pt.structuralDefaults(normalized, gvk)) {
			structural = nil
		}
		c.keep(merger, merged, normalized, out, structural)
		return out, outcome, nil
	case compiler.KindJSONPatch:
		ops, err := jsonpatch.AppendFromCEL(c.opsRoom(), res.Value)
		if err != nil {
			return nil, outcome, err
		}
		out, skipped, err := c.patch(pt, in.Object, ops, gvk)
		c.keepOps(ops)
		outcome.Skipped = skipped
		return out, outcome, err
	}
	return nil, outcome, apierrors.NewInternalError(fmt.Errorf("unsupported mutation kind %v", m.Kind))
}

// Normalize presents an object of a built-in kind in its typed form, as
// kube-apiserver holds it after a mutation (scheme.Scheme.Normalize);
// objects of other kinds come back as they are.
func (pt *Patcher) Normalize(obj map[string]any, gvk schema.GroupVersionKind) (map[string]any, error) {
	return pt.Scheme.Normalize(obj, gvk)
}

// NormalizeRequest presents the object of a request as Normalize does, but
// refuses what kube-apiserver's request decoder refuses
// (scheme.Scheme.NormalizeRequest).
func (pt *Patcher) NormalizeRequest(obj map[string]any, gvk schema.GroupVersionKind) (map[string]any, error) {
	return pt.Scheme.NormalizeRequest(obj, gvk)
}

// defaults applies kube-apiserver's defaulting to the result of a mutation,
// as the dispatcher does before the next mutation (dispatchOne); obj is in
// normalized form when normalized is set.
func (pt *Patcher) defaults(obj map[string]any, gvk schema.GroupVersionKind, normalized bool) (map[string]any, error) {
	if pt.SkipDefaulting {
		return obj, nil
	}
	defaults := pt.Scheme.Default
	if normalized {
		defaults = pt.Scheme.DefaultNormalized
	}
	out, err := defaults(obj, gvk)
	if err != nil {
		return nil, defaultingError(gvk, err)
	}
	return out, nil
}

// defaultingError is the error of a failed defaulting of kind gvk.
func defaultingError(gvk schema.GroupVersionKind, err error) error {
	return apierrors.NewInternalError(fmt.Errorf("defaulting %s: %w", gvk.Kind, err))
}
