package scheme

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/big"
	"slices"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	jsonserializer "k8s.io/apimachinery/pkg/runtime/serializer/json"
	utilfield "k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/kubernetes/pkg/api/legacyscheme"

	"github.com/mutatis-dev/mutatis/internal/jsonvalue"
)

// kube is kube-apiserver's own scheme: legacyscheme.Scheme with every API
// group of kube-apiserver 1.37 registered, internal and versioned, with
// their defaulters, conversions and declarative validations, and the
// registry strategies of the built-in resources.
type kube struct {
	scheme *runtime.Scheme
	// decoder decodes request bodies as kube-apiserver's handlers do with
	// fieldValidation Warn (the default): the strict JSON serializer, whose
	// strict errors become warnings.
	strict runtime.Serializer
	codecs serializer.CodecFactory
	// strategies maps the kind of a request to its registry strategy.
	strategies map[schema.GroupKind]strategy
	// subresources maps a kind and a subresource carrying it to the
	// subresource's update strategy.
	subresources map[subresourceKey]strategy
}

// subresourceKey names a subresource of the resource of a kind.
type subresourceKey struct {
	kind        schema.GroupKind
	subresource string
}

// kubeOnce guards the registration of kube-apiserver's API groups into
// legacyscheme.Scheme. That scheme is k8s.io/kubernetes's process-wide one
// (the registry strategies hold it for declarative validation), so it is
// registered once per process, on the first use of defaulting, conversion
// or validation, never at start-up.
var kubeOnce = sync.OnceValues(func() (*kube, error) {
	s := legacyscheme.Scheme
	for _, install := range installers() {
		if err := install(s); err != nil {
			return nil, fmt.Errorf("registering kube-apiserver's API groups: %w", err)
		}
	}
	k := &kube{
		scheme:       s,
		codecs:       serializer.NewCodecFactory(s),
		strict:       jsonserializer.NewSerializerWithOptions(jsonserializer.DefaultMetaFactory, s, s, jsonserializer.SerializerOptions{Strict: true}),
		strategies:   map[schema.GroupKind]strategy{},
		subresources: map[subresourceKey]strategy{},
	}
	for _, rs := range strategies() {
		k.strategies[rs.kind] = rs.strategy
	}
	for _, ss := range subresourceStrategies() {
		k.subresources[subresourceKey{ss.kind, ss.subresource}] = ss.strategy
	}
	return k, nil
})

// kube returns kube-apiserver's scheme, registered on first use.
func (s *Scheme) kube() (*kube, error) { return kubeOnce() }

// typed converts obj, of built-in kind gvk, to its Go type as
// kube-apiserver's ObjectConvertor converts an unstructured object
// (ConvertToVersion: FromUnstructured into the kind's type). It is the
// reference of planner.typed (convertfast.go), which the admission
// paths use.
func (k *kube) typed(obj map[string]any, gvk schema.GroupVersionKind) (runtime.Object, error) {
	typed, err := k.scheme.New(gvk)
	if err != nil {
		return nil, err
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, typed); err != nil {
		return nil, err
	}
	typed.GetObjectKind().SetGroupVersionKind(gvk)
	return typed, nil
}

// unstructuredOf is the unstructured content of a typed object of kind
// gvk (ToUnstructured): the reference of planner.unstructured
// (convertfast.go), which the admission paths use.
func unstructuredOf(typed runtime.Object, gvk schema.GroupVersionKind) (map[string]any, error) {
	typed.GetObjectKind().SetGroupVersionKind(gvk)
	return runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
}

// internalVersion is the internal version of gvk's group.
func internalVersion(gvk schema.GroupVersionKind) schema.GroupVersion {
	return schema.GroupVersion{Group: gvk.Group, Version: runtime.APIVersionInternal}
}

// Default applies kube-apiserver's defaulters to obj, of kind gvk, as the
// MutatingAdmissionPolicy dispatcher does after every mutation
// (dispatchOne: ConvertToVersion of the patch result to the kind's Go type,
// then the ObjectDefaulter), and returns the object as the next policy sees
// it (ToUnstructured). Kinds without a Go type come back as they are.
//
// Built-in kinds take a planned conversion around the same defaulters
// when it can tell (defaultFast), defaultReference otherwise; the result
// may then share the subtrees the defaulters left alone with obj.
func (s *Scheme) Default(obj map[string]any, gvk schema.GroupVersionKind) (map[string]any, error) {
	return s.defaults(obj, gvk, true, false)
}

// DefaultNormalized is Default for obj in normalized form: a result of
// Normalize, NormalizeRequest, DecodeRequest, Patch, Default or
// DefaultNormalized for kind gvk, or one of the mutation results mutatis
// derives from them (what ToUnstructured writes for some value of the
// kind's Go type). When the defaulters change nothing, it tells so without
// writing the object again and returns obj (defaultwatch.go); the result
// is Default's.
func (s *Scheme) DefaultNormalized(obj map[string]any, gvk schema.GroupVersionKind) (map[string]any, error) {
	return s.defaults(obj, gvk, true, true)
}

// defaultReference is Default through the typed round trip, the
// definition of its result and the fallback of its fast path
// (defaultfast.go): FromUnstructured into the kind's Go type, the
// scheme's defaulters, ToUnstructured, and the input itself when that
// changed nothing.
func (s *Scheme) defaultReference(obj map[string]any, gvk schema.GroupVersionKind) (map[string]any, error) {
	return s.defaults(obj, gvk, false, false)
}

// defaults is Default, through the fast path when fast is set, for obj in
// normalized form when normalized is (DefaultNormalized).
func (s *Scheme) defaults(obj map[string]any, gvk schema.GroupVersionKind, fast, normalized bool) (map[string]any, error) {
	if obj != nil && s != nil && s.crs.Recognizes(gvk) {
		return s.crs.Default(obj, gvk)
	}
	if obj == nil || !s.Recognizes(gvk) {
		return obj, nil
	}
	k, err := s.kube()
	if err != nil {
		return nil, err
	}
	if fast {
		if out, ok := s.plans.defaultFast(k, obj, gvk, normalized); ok {
			return out, nil
		}
	}
	return k.defaultTyped(obj, gvk)
}

// defaultTyped is defaultReference of a built-in kind.
func (k *kube) defaultTyped(obj map[string]any, gvk schema.GroupVersionKind) (map[string]any, error) {
	typed, err := k.typed(obj, gvk)
	if err != nil {
		return nil, err
	}
	k.scheme.Default(typed)
	out, err := unstructuredOf(typed, gvk)
	if err != nil {
		return nil, err
	}
	if jsonvalue.Equal(out, obj) {
		// Nothing to default: the input stands for the result, and keeps
		// sharing its subtrees with whatever it shared them with.
		return obj, nil
	}
	return out, nil
}

// DecodeRequest decodes obj, the body of a request for built-in kind gvk,
// as kube-apiserver's create and update handlers do: strict JSON decoding
// into the kind's Go type, whose strict errors (unknown and duplicate
// fields) are warnings under fieldValidation Warn, the server's default;
// defaulting; conversion to the internal version. The object comes back
// in version gvk, as admission presents it to policies of that version.
//
// A body the decoder refuses (a value of the wrong type, an integer out of
// its field's range) is kube-apiserver's 400: "<Kind> in version "<v>"
// cannot be handled as a <Kind>: <error>".
//
// Where it can tell, the object is decoded without encoding it to JSON
// (decodeRequestFast); decodeRequestReference is the definition.
func (s *Scheme) DecodeRequest(obj map[string]any, gvk schema.GroupVersionKind) (out map[string]any, warnings []string, err error) {
	return s.decodeRequest(obj, gvk, true)
}

// decodeRequestReference is DecodeRequest through kube-apiserver's
// request decoder always.
func (s *Scheme) decodeRequestReference(obj map[string]any, gvk schema.GroupVersionKind) (out map[string]any, warnings []string, err error) {
	return s.decodeRequest(obj, gvk, false)
}

// decodeRequest is DecodeRequest, through decodeRequestFast when fast is
// set.
func (s *Scheme) decodeRequest(obj map[string]any, gvk schema.GroupVersionKind, fast bool) (out map[string]any, warnings []string, err error) {
	if obj != nil && s.crs.Recognizes(gvk) {
		return s.crs.DecodeRequest(obj, gvk, metav1.FieldValidationWarn)
	}
	if obj == nil || !s.Recognizes(gvk) {
		return obj, nil, nil
	}
	if fast {
		// The fast path's plans need only the kind's Go type, not
		// kube-apiserver's scheme: built first, while another goroutine
		// may still be registering the scheme (Warm).
		s.planAhead(gvk)
	}
	k, err := s.kube()
	if err != nil {
		return nil, nil, err
	}
	var internal runtime.Object
	if fast {
		internal, _ = s.decodeRequestFast(k, obj, gvk)
	}
	if internal == nil {
		if internal, warnings, err = k.decodeRequest(obj, gvk); err != nil {
			return nil, nil, err
		}
	}
	versioned, err := k.convertFresh(internal, gvk.GroupVersion())
	if err != nil {
		return nil, nil, apierrors.NewInternalError(err)
	}
	out, err = s.plans.unstructured(versioned, gvk)
	if err != nil {
		return nil, nil, apierrors.NewInternalError(err)
	}
	return out, warnings, nil
}

// decodeRequest is kube-apiserver's request decoder on obj, encoded to
// JSON: the internal object, and the strict errors as warnings.
func (k *kube) decodeRequest(obj map[string]any, gvk schema.GroupVersionKind) (internal runtime.Object, warnings []string, err error) {
	body, _ := requestJSON(obj)
	data, err := json.Marshal(body)
	if err != nil {
		return nil, nil, apierrors.NewBadRequest(err.Error())
	}
	decoder := k.codecs.DecoderToVersion(k.strict, internalVersion(gvk))
	internal, _, err = decoder.Decode(data, &gvk, nil)
	if err != nil {
		strictErr, isStrict := runtime.AsStrictDecodingError(err)
		if !isStrict || internal == nil {
			return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", gvk.Kind, gvk.Version, gvk.Kind, err))
		}
		for _, e := range strictErr.Errors() {
			warnings = append(warnings, strictWarnings(e.Error())...)
		}
	}
	return internal, warnings, nil
}

// requestJSON is v, a decoded request body, to be encoded again for the
// request decoder. Kubernetes' JSON decoding (k8s.io/apimachinery's
// util/json) keeps an integer beyond int64's range as a float64, which
// encoding/json writes in its shortest form (9223372036854775808 becomes
// 9223372036854776000): such numbers are written as the integer they are,
// so that the decoder's refusal names the number of the body, as
// kube-apiserver's does ("cannot unmarshal number 9223372036854775808 into
// Go struct field PodSpec.spec.terminationGracePeriodSeconds of type
// int64"). v is returned as it is when it holds none (changed is false).
func requestJSON(v any) (out any, changed bool) {
	switch v := v.(type) {
	case map[string]any:
		var m map[string]any
		for k, e := range v {
			if r, ok := requestJSON(e); ok {
				if m == nil {
					m = maps.Clone(v)
				}
				m[k] = r
			}
		}
		if m != nil {
			return m, true
		}
	case []any:
		var l []any
		for i, e := range v {
			if r, ok := requestJSON(e); ok {
				if l == nil {
					l = slices.Clone(v)
				}
				l[i] = r
			}
		}
		if l != nil {
			return l, true
		}
	case float64:
		// An integer-syntax number decodes to a float64 only outside
		// int64's range (-2^63 itself among them: the float of
		// -9223372036854775809). From 1e21 on, encoding/json writes an
		// exponent, as a body that large most likely had.
		if a := math.Abs(v); a >= 1<<63 && a < 1e21 && v == math.Trunc(v) {
			return json.Number(new(big.Float).SetFloat64(v).Text('f', 0)), true
		}
	}
	return v, false
}

// strictWarnings is upstream's parseYAMLWarnings for a JSON body: one
// warning per strict decoding error.
func strictWarnings(msg string) []string {
	const yamlPrefix = "error converting YAML to JSON: yaml: unmarshal errors:\n"
	if rest, ok := strings.CutPrefix(msg, yamlPrefix); ok {
		var out []string
		for _, line := range strings.Split(rest, "\n") {
			if line = strings.TrimSpace(line); line != "" {
				out = append(out, line)
			}
		}
		return out
	}
	return []string{msg}
}

// Convert presents obj, of built-in kind from, in the version of kind to,
// through the internal version, as kube-apiserver converts objects between
// versions of a group (and between groups that share an internal type, as
// Event does). from == to gives the round trip through the internal version
// that an admitted object makes before storage.
func (s *Scheme) Convert(obj map[string]any, from, to schema.GroupVersionKind) (map[string]any, error) {
	if obj == nil {
		return nil, nil
	}
	if !s.Recognizes(from) || !s.Recognizes(to) {
		return nil, fmt.Errorf("converting %s to %s: not built-in kinds", from, to)
	}
	k, err := s.kube()
	if err != nil {
		return nil, err
	}
	typed, err := s.plans.typed(k, obj, from)
	if err != nil {
		return nil, err
	}
	internal, err := k.convertFresh(typed, internalVersion(from))
	if err != nil {
		return nil, err
	}
	versioned, err := k.convertFresh(internal, to.GroupVersion())
	if err != nil {
		return nil, err
	}
	return s.plans.unstructured(versioned, to)
}

// ConvertToVersion converts obj, of built-in kind from, to the group/version
// to as kube-apiserver's ObjectConvertor (its scheme's ConvertToVersion)
// converts the typed object: the MutatingAdmissionPolicy dispatcher does so
// with every mutation's result, to the group/version of the request's kind
// (dispatchOne). The scheme converts between a version and its group's
// internal version only: between two external versions (an object seen
// through an Equivalent match) it answers its own error, returned as it is.
// The result's kind is returned with it.
func (s *Scheme) ConvertToVersion(obj map[string]any, from schema.GroupVersionKind, to schema.GroupVersion) (map[string]any, schema.GroupVersionKind, error) {
	k, err := s.kube()
	if err != nil {
		return nil, schema.GroupVersionKind{}, err
	}
	typed, err := s.plans.typed(k, obj, from)
	if err != nil {
		return nil, schema.GroupVersionKind{}, err
	}
	out, err := k.convertFresh(typed, to)
	if err != nil {
		return nil, schema.GroupVersionKind{}, err
	}
	gvk := out.GetObjectKind().GroupVersionKind()
	m, err := s.plans.unstructured(out, gvk)
	return m, gvk, err
}

// Request describes the request whose admitted object Validate checks.
type Request struct {
	// Operation is admission.Create or admission.Update; other operations
	// are not validated.
	Operation admission.Operation
	// Kind is the kind of the request (and of the objects).
	Kind schema.GroupVersionKind
	// Resource and Subresource are the request's.
	Resource    schema.GroupVersionResource
	Subresource string
	// Namespace and Name are the request's.
	Namespace, Name string
	// User is the requesting user, in the strategy's context as in
	// kube-apiserver's request context (a CertificateSigningRequest's
	// strategy copies it into spec.username, uid, groups and extra);
	// nil: none.
	User user.Info
}

// Validate checks obj, the object admission leaves for req (old: the stored
// object of an UPDATE), as kube-apiserver's registry does before storing it:
// for built-in kinds, the resource's strategy through rest.BeforeCreate or
// rest.BeforeUpdate (PrepareForCreate/PrepareForUpdate, Validate or
// ValidateUpdate with declarative validation, the metadata checks, the
// warnings, Canonicalize), after what genericregistry.Store does first
// (system fields, generated names, resourceVersion checks, and the
// Service store's begin hooks but for allocation: beginService). The outcome
// holds kube-apiserver's refusal (a 422 `<Kind> "<name>" is invalid: …` for
// an invalid object) or the object it would store. An UPDATE of a
// subresource that carries its resource's kind goes through that
// subresource's strategy (`pods/status`, `pods/ephemeralcontainers`, a
// custom resource's `status`: each keeps only its own part of the object
// and takes the rest from old); other subresource requests, kinds without
// a registry strategy and operations other than CREATE and UPDATE are not
// validated: the outcome is nil.
//
// Neither obj nor old is modified: the strategy works on their internal
// forms. A returned error is one of the simulation, not a refusal.
func (s *Scheme) Validate(ctx context.Context, req Request, obj, old map[string]any) (*Validation, error) {
	if obj == nil {
		return nil, nil
	}
	if req.Operation != admission.Create && req.Operation != admission.Update {
		return nil, nil
	}
	if req.Subresource != "" && req.Operation != admission.Update {
		return nil, nil
	}
	precheck := func(builtin bool) *Validation {
		if req.Operation != admission.Create || req.Subresource != "" {
			return nil
		}
		if status := metadataPrecheck(req, obj, builtin); status != nil {
			return &Validation{Invalid: status}
		}
		return nil
	}
	if s.crs.Recognizes(req.Kind) {
		if v := precheck(false); v != nil {
			return v, nil
		}
		var p Persisted
		var err error
		if req.Subresource == "" {
			p, err = s.crs.Persist(ctx, req.Operation, obj, old, req.Kind, req.Namespace)
		} else {
			var ok bool
			if p, ok, err = s.crs.PersistSubresource(ctx, req.Subresource, obj, old, req.Kind, req.Namespace); !ok && err == nil {
				return nil, nil
			}
		}
		var status *apierrors.StatusError
		if errors.As(err, &status) {
			return &Validation{Invalid: boundInvalid(status), Warnings: p.Warnings}, nil
		}
		if err != nil {
			return nil, err
		}
		return &Validation{Warnings: p.Warnings, Stored: p.Returned}, nil
	}
	if !s.Recognizes(req.Kind) {
		return nil, nil
	}
	k, err := s.kube()
	if err != nil {
		return nil, err
	}
	st, ok := k.strategies[req.Kind.GroupKind()]
	if req.Subresource != "" {
		st, ok = k.subresources[subresourceKey{req.Kind.GroupKind(), req.Subresource}]
	}
	if !ok {
		return nil, nil
	}
	internal, err := s.plans.internal(k, obj, req.Kind)
	if err != nil {
		return nil, err
	}
	if v := precheck(true); v != nil {
		return v, nil
	}
	v, err := validateWithin(ctx, req, func() (*Validation, error) {
		return k.validate(ctx, &s.plans, st, req, internal, old)
	})
	if err != nil {
		return nil, err
	}
	v.Invalid = boundInvalid(v.Invalid)
	if v.Invalid == nil {
		// The validating admission plugins receive the strategy's object
		// itself; stored's conversion shares its parts, never writes them.
		v.internal = internal
		returned := internal
		if req.Subresource == "" {
			// The store decorates what it returns, after the validating
			// plugins saw the object.
			if returned, err = decorate(req.Kind.GroupKind(), internal); err != nil {
				return nil, apierrors.NewInternalError(err)
			}
		}
		if v.Stored, err = k.stored(&s.plans, returned, req.Kind); err != nil {
			return nil, apierrors.NewInternalError(err)
		}
	}
	return v, nil
}

// Validation is the outcome of Validate.
type Validation struct {
	// Invalid is kube-apiserver's refusal of the object (a 422 for an
	// invalid one), or nil.
	Invalid *apierrors.StatusError
	// Warnings are the strategy's.
	Warnings []string
	// Stored is the object as the registry would store it (after
	// PrepareForCreate or PrepareForUpdate and Canonicalize) and return
	// it (decoded from storage, defaulted again), in the request's
	// version, without the system fields the store sets (uid,
	// creationTimestamp, resourceVersion); nil when Invalid is set.
	Stored map[string]any

	// internal is the object as the strategy left it (Internal).
	internal runtime.Object
}

// Internal is the object in its internal form as the registry's strategy
// left it, before it is written: what kube-apiserver's createValidation
// and updateValidation hand the validating admission plugins (a built-in
// kind's, when Invalid is nil; nil otherwise). It is the caller's: pass
// each plugin chain a copy (DeepCopyObject), as kube-apiserver does.
func (v *Validation) Internal() runtime.Object { return v.internal }

// stored is internal, as the strategy left it, in version gvk without the
// system fields, as the store returns it: decoded from the bytes it wrote,
// which applies the defaulters again (a PVC's strategy clears its status,
// decoding defaults its phase to Pending).
func (k *kube) stored(d *planner, internal runtime.Object, gvk schema.GroupVersionKind) (map[string]any, error) {
	// internal is the strategy's, which nothing uses afterwards.
	versioned, err := k.convertFresh(internal, gvk.GroupVersion())
	if err != nil {
		return nil, err
	}
	k.scheme.Default(versioned)
	out, err := d.unstructured(versioned, gvk)
	if err != nil {
		return nil, err
	}
	if md, ok := out["metadata"].(map[string]any); ok {
		delete(md, "uid")
		delete(md, "creationTimestamp")
		delete(md, "resourceVersion")
	}
	return out, nil
}

// validate runs the strategy on internal (and old, for an UPDATE) and
// sorts kube-apiserver's refusals from the errors of the simulation.
func (k *kube) validate(ctx context.Context, d *planner, st strategy, req Request, internal runtime.Object, old map[string]any) (*Validation, error) {
	warnings, err := k.beforeStore(ctx, d, st, req, internal, old)
	v := &Validation{Warnings: warnings}
	var status *apierrors.StatusError
	switch {
	case errors.As(err, &status):
		v.Invalid = status
	case err != nil:
		return nil, err
	}
	return v, nil
}

// beforeStore is what genericregistry.Store does to the object of a create
// or an update before it reaches storage, through the strategy.
func (k *kube) beforeStore(ctx context.Context, d *planner, st strategy, req Request, internal runtime.Object, old map[string]any) (warnings []string, err error) {
	rec := &warningRecorder{}
	ctx = warning.WithWarningRecorder(ctx, rec)
	ctx = genericapirequest.WithNamespace(ctx, req.Namespace)
	if req.User != nil {
		ctx = genericapirequest.WithUser(ctx, req.User)
	}
	verb := "create"
	if req.Operation == admission.Update {
		verb = "update"
	}
	ctx = genericapirequest.WithRequestInfo(ctx, &genericapirequest.RequestInfo{
		IsResourceRequest: true, Verb: verb, APIPrefix: "apis",
		APIGroup: req.Resource.Group, APIVersion: req.Resource.Version,
		Namespace: req.Namespace, Resource: req.Resource.Resource, Subresource: req.Subresource, Name: req.Name,
	})
	if req.Operation == admission.Create {
		// The store fills the system fields and generates the name before
		// the strategy (genericregistry.Store.Create).
		m, err := meta.Accessor(internal)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		rest.FillObjectMetaSystemFields(m)
		if m.GetGenerateName() != "" && m.GetName() == "" {
			m.SetName(st.GenerateName(m.GetGenerateName()))
		}
		// Then the registry's hook (a Service's IP families and
		// allocations).
		if err := beginCreate(ctx, req.Kind.GroupKind(), internal); err != nil {
			return rec.warnings, err
		}
		err = rest.BeforeCreate(st, ctx, internal)
		return rec.warnings, err
	}
	if old == nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("validating an UPDATE of %s without the old object", req.Kind.Kind))
	}
	oldInternal, err := d.internal(k, old, req.Kind)
	if err != nil {
		return nil, err
	}
	if err := resourceVersions(ctx, st, req, internal, oldInternal); err != nil {
		return nil, err
	}
	// A subresource's store has the strategy of its own and no begin
	// hooks (the Service status store is a copy made before they are set).
	if req.Subresource == "" {
		if err := beginUpdate(ctx, req.Kind.GroupKind(), internal, oldInternal); err != nil {
			return rec.warnings, err
		}
	}
	err = rest.BeforeUpdate(st, ctx, internal, oldInternal)
	return rec.warnings, err
}

// resourceVersions does what genericregistry.Store.Update does with the
// resourceVersion of an update before the strategy: an object without one
// gets the stored object's when the strategy allows unconditional updates,
// and is refused otherwise; one that differs is a conflict. A stored object
// always has a resourceVersion: an old object given without one (a file)
// is taken to have "1", and an update of it whose object has none either
// is taken to be at that version, whatever the strategy (the same rule as
// custom resources': checkResourceVersion).
func resourceVersions(ctx context.Context, st strategy, req Request, obj, old runtime.Object) error {
	objMeta, err := meta.Accessor(obj)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	oldMeta, err := meta.Accessor(old)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	offline := oldMeta.GetResourceVersion() == ""
	if offline {
		oldMeta.SetResourceVersion("1")
	}
	switch rv := objMeta.GetResourceVersion(); {
	case rv == "" && (offline || st.AllowUnconditionalUpdate(ctx)):
		objMeta.SetResourceVersion(oldMeta.GetResourceVersion())
	case rv == "":
		// Upstream names the resource where the kind belongs (#18526).
		qualified := schema.GroupKind{Group: req.Resource.Group, Kind: req.Resource.Resource}
		return apierrors.NewInvalid(qualified, req.Name, utilfield.ErrorList{utilfield.Invalid(utilfield.NewPath("metadata").Child("resourceVersion"), uint64(0), "must be specified for an update")})
	case rv != oldMeta.GetResourceVersion():
		return apierrors.NewConflict(req.Resource.GroupResource(), req.Name, errors.New(genericregistry.OptimisticLockErrorMsg))
	}
	return nil
}

// convertFresh is k.scheme.ConvertToVersion(in, target) for an object in
// that nothing else holds and nothing uses afterwards: without the deep
// copy of in that ConvertToVersion makes first so that its result shares
// nothing with in (UnsafeConvertToVersion). The conversion functions run
// on in itself instead of on a copy equal to it, so the result is the same
// (TestConvertFreshIsConvertToVersion); it may share memory with in, which
// the conversion may also have modified (some write the maps they share).
func (k *kube) convertFresh(in runtime.Object, target runtime.GroupVersioner) (runtime.Object, error) {
	return k.scheme.UnsafeConvertToVersion(in, target)
}

// internal is obj, of kind gvk, in its group's internal version: the
// reference of planner.internal.
func (k *kube) internal(obj map[string]any, gvk schema.GroupVersionKind) (runtime.Object, error) {
	typed, err := k.typed(obj, gvk)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", gvk.Kind, gvk.Version, gvk.Kind, err))
	}
	internal, err := k.scheme.ConvertToVersion(typed, internalVersion(gvk))
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return internal, nil
}

// Internal is obj, of built-in kind gvk, in its group's internal version:
// the object kube-apiserver's admission chain hands its plugins (package
// admissionplugins runs them on it). An object its Go type cannot hold is
// the API server's 400, a failed conversion its 500.
func (s *Scheme) Internal(obj map[string]any, gvk schema.GroupVersionKind) (runtime.Object, error) {
	k, err := s.kube()
	if err != nil {
		return nil, err
	}
	return s.plans.internal(k, obj, gvk)
}

// FromInternal is internal, an object of gvk's group in its internal
// version that nothing else holds or uses afterwards (the admission
// plugins' result), converted to gvk's version and unstructured. The
// conversion may modify internal and the result may share memory with it
// (kube.convertFresh).
func (s *Scheme) FromInternal(internal runtime.Object, gvk schema.GroupVersionKind) (map[string]any, error) {
	k, err := s.kube()
	if err != nil {
		return nil, err
	}
	versioned, err := k.convertFresh(internal, gvk.GroupVersion())
	if err != nil {
		return nil, err
	}
	return s.plans.unstructured(versioned, gvk)
}

// warningRecorder collects the warnings of one request.
type warningRecorder struct {
	mu       sync.Mutex
	warnings []string
}

func (r *warningRecorder) AddWarning(_, text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.warnings = append(r.warnings, text)
}

// Kube returns kube-apiserver's own runtime.Scheme (legacyscheme.Scheme of
// k8s.io/kubernetes with every API group registered), for oracles that run
// upstream code with kube-apiserver's defaulters and conversions (e.g.
// admission.NewObjectInterfacesFromScheme). It must not be modified.
func Kube() (*runtime.Scheme, error) {
	k, err := kubeOnce()
	if err != nil {
		return nil, err
	}
	return k.scheme, nil
}

// ConvertTyped converts in, a typed object of a built-in kind, into out,
// the same kind in another version of its group, as kube-apiserver does:
// through the group's internal version, with k8s.io/kubernetes' conversion
// functions. out shares nothing with in; its TypeMeta is left as it was.
func ConvertTyped(in, out runtime.Object) error {
	k, err := kubeOnce()
	if err != nil {
		return err
	}
	gvks, _, err := k.scheme.ObjectKinds(in)
	if err != nil {
		return err
	}
	internal, err := k.scheme.ConvertToVersion(in.DeepCopyObject(), internalVersion(gvks[0]))
	if err != nil {
		return err
	}
	return k.scheme.Convert(internal, out, nil)
}

// Warm registers kube-apiserver's API groups ahead of need, as the first
// decoding, defaulting, conversion or validation of a built-in kind would.
// Safe to call concurrently with anything, any number of times; a failure
// is left for the first real use to report. cmd/mutatis calls it on a
// spare core at start (internal/warmstart).
func Warm() { kubeOnce() }

// ConvertAcrossKinds converts obj, of built-in kind from, into the
// internal version of built-in kind to and back to to's version, as
// kube-apiserver's mutating webhook dispatcher does with an object whose
// kind a webhook's patch changed: ObjectConvertor.Convert of the
// versioned object into the request's internal object (at the end of the
// dispatch, or before a later webhook that wants another version). Kinds
// without a conversion between them give the scheme's own error
// ("converting (v1.Deployment) to (core.ConfigMap): unknown
// conversion"), returned as it is.
func (s *Scheme) ConvertAcrossKinds(obj map[string]any, from, to schema.GroupVersionKind) (map[string]any, error) {
	k, err := s.kube()
	if err != nil {
		return nil, err
	}
	typed, err := k.typed(obj, from)
	if err != nil {
		return nil, err
	}
	internal, err := k.scheme.New(to.GroupKind().WithVersion(runtime.APIVersionInternal))
	if err != nil {
		return nil, err
	}
	if err := k.scheme.Convert(typed, internal, nil); err != nil {
		return nil, err
	}
	return s.FromInternal(internal, to)
}
