package applyconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	"k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	apiservercel "k8s.io/apiserver/pkg/cel"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/kube-openapi/pkg/spec3"
)

// ErrNoSchema is wrapped by DeclType errors for kinds whose OpenAPI schema is
// not available (unknown kinds, and built-in kinds, for which only the
// structured-merge-diff schema is embedded in client-go).
var ErrNoSchema = errors.New("no OpenAPI schema")

// Schemas is a concurrency-safe registry of the schemas that MutatingAdmissionPolicy
// ApplyConfigurations are merged with: built-in kinds (from the schema embedded in
// client-go's applyconfigurations) and CustomResourceDefinition kinds (added with
// AddCRD). Type converters are built once per kind, on first use, and reused.
//
// The zero value is not usable; call NewSchemas.
type Schemas struct {
	builtinOnce sync.Once
	builtin     managedfields.TypeConverter
	// builtinKinds caches, per GVK, whether the built-in converter knows it
	// (schema.GroupVersionKind -> bool).
	builtinKinds sync.Map
	// builtinMergers caches the Merger of each built-in kind
	// (schema.GroupVersionKind -> *Merger).
	builtinMergers sync.Map

	mu sync.RWMutex
	// crds holds the GVKs each CRD (by metadata.name) serves.
	crds map[string][]schema.GroupVersionKind
	// kinds holds the CRD-served kinds.
	kinds map[schema.GroupVersionKind]*crdKind
}

// crdKind is one served version of one CRD; its type converter and
// declaration type are built lazily, at most once.
type crdKind struct {
	crd     *apiextensionsv1.CustomResourceDefinition
	version string

	tcOnce sync.Once
	tc     managedfields.TypeConverter
	merger *Merger
	tcErr  error

	declOnce sync.Once
	decl     *apiservercel.DeclType
	declErr  error
}

// NewSchemas returns a registry that knows the built-in kinds and no CRDs.
func NewSchemas() *Schemas {
	return &Schemas{
		crds:  map[string][]schema.GroupVersionKind{},
		kinds: map[schema.GroupVersionKind]*crdKind{},
	}
}

// AddCRD registers (or replaces) a CustomResourceDefinition, given as
// *apiextensionsv1.CustomResourceDefinition or as *unstructured.Unstructured.
// Every served version becomes a kind with a schema; versions that are not
// served are not registered, as kube-apiserver publishes no OpenAPI for them.
// Unlike kube-apiserver, the Established condition is not required, so CRD
// manifests can be used offline.
func (s *Schemas) AddCRD(obj runtime.Object) error {
	crd, err := toCRD(obj)
	if err != nil {
		return err
	}
	if crd.Name == "" {
		return fmt.Errorf("adding CustomResourceDefinition: metadata.name is empty")
	}
	if crd.Spec.Names.Kind == "" || crd.Spec.Group == "" {
		return fmt.Errorf("adding CustomResourceDefinition %s: spec.group and spec.names.kind are required", crd.Name)
	}
	var gvks []schema.GroupVersionKind
	entries := map[schema.GroupVersionKind]*crdKind{}
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}
		gvks = append(gvks, gvk)
		entries[gvk] = &crdKind{crd: crd, version: v.Name}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	s.removeLocked(crd.Name)
	for gvk, e := range entries {
		s.kinds[gvk] = e
	}
	s.crds[crd.Name] = gvks
	return nil
}

// RemoveCRD forgets the CustomResourceDefinition with the given metadata.name.
// Removing an unknown CRD is a no-op.
func (s *Schemas) RemoveCRD(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.removeLocked(name)
}

func (s *Schemas) removeLocked(name string) {
	for _, gvk := range s.crds[name] {
		delete(s.kinds, gvk)
	}
	delete(s.crds, name)
}

func toCRD(obj runtime.Object) (*apiextensionsv1.CustomResourceDefinition, error) {
	var crd *apiextensionsv1.CustomResourceDefinition
	switch o := obj.(type) {
	case *apiextensionsv1.CustomResourceDefinition:
		crd = o.DeepCopy()
	case *unstructured.Unstructured:
		crd = &apiextensionsv1.CustomResourceDefinition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.UnstructuredContent(), crd); err != nil {
			return nil, fmt.Errorf("decoding CustomResourceDefinition %s: %w", o.GetName(), err)
		}
	default:
		return nil, fmt.Errorf("adding CustomResourceDefinition: unsupported object type %T", obj)
	}
	// kube-apiserver stores CRDs defaulted (listKind, singular, conversion);
	// the OpenAPI builder relies on listKind.
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(crd)
	return crd, nil
}

// TypeConverter returns the structured-merge-diff type converter for gvk. For a
// kind with no schema it returns the error kube-apiserver's MutatingAdmissionPolicy
// dispatcher returns: a 503 StatusError "Resource kind <gvk> not found. There can be
// a delay between when CustomResourceDefinitions are created and when they are available."
func (s *Schemas) TypeConverter(gvk schema.GroupVersionKind) (managedfields.TypeConverter, error) {
	m, err := s.Merger(gvk)
	if err != nil {
		return nil, err
	}
	return m.tc, nil
}

// Serves tells whether a CRD added to s serves kind gvk.
func (s *Schemas) Serves(gvk schema.GroupVersionKind) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.kinds[gvk] != nil
}

// BuiltinMerger returns the Merger of the built-in kind gvk from
// client-go's embedded schema, nil when that schema lacks gvk: what
// Merger returns for gvk whatever CRDs s holds, when not nil.
func (s *Schemas) BuiltinMerger(gvk schema.GroupVersionKind) *Merger {
	if s.builtinConverter(gvk) == nil {
		return nil
	}
	m, _ := s.Merger(gvk)
	return m
}

// Merger returns the Merger of objects of kind gvk: TypeConverter's
// converter with the kind's schema looked up once. Errors are those of
// TypeConverter.
func (s *Schemas) Merger(gvk schema.GroupVersionKind) (*Merger, error) {
	if tc := s.builtinConverter(gvk); tc != nil {
		if m, ok := s.builtinMergers.Load(gvk); ok {
			return m.(*Merger), nil
		}
		m, _ := s.builtinMergers.LoadOrStore(gvk, NewMerger(tc, gvk))
		return m.(*Merger), nil
	}
	s.mu.RLock()
	e := s.kinds[gvk]
	s.mu.RUnlock()
	if e == nil {
		return nil, notFound(gvk)
	}
	e.tcOnce.Do(func() {
		e.tc, e.tcErr = buildCRDTypeConverter(e.crd, e.version)
		if e.tcErr == nil {
			e.merger = NewMerger(e.tc, gvk)
		}
	})
	if e.tcErr != nil {
		// Upstream logs the build failure and answers as if the kind were unknown.
		return nil, notFound(gvk)
	}
	return e.merger, nil
}

func notFound(gvk schema.GroupVersionKind) error {
	return apierrors.NewServiceUnavailable(fmt.Sprintf("Resource kind %s not found. There can be a delay between when CustomResourceDefinitions are created and when they are available.", gvk))
}

// builtinConverter returns the shared built-in type converter if it has a type
// for gvk, else nil. Like upstream's TypeConverterManager, it probes the converter
// with an empty object of that kind; the answer is cached per GVK.
func (s *Schemas) builtinConverter(gvk schema.GroupVersionKind) managedfields.TypeConverter {
	s.builtinOnce.Do(func() {
		// applyconfigurations.NewTypeConverter(clientgoscheme.Scheme), with
		// the schema parsed at generation time (builtinschema.go).
		parser, err := builtinParser()
		if err != nil {
			panic(err) // the embedded schema is tested: it always decodes
		}
		s.builtin = managedfields.NewSchemeTypeConverter(clientgoscheme.Scheme, parser)
	})
	if known, ok := s.builtinKinds.Load(gvk); ok {
		if known.(bool) {
			return s.builtin
		}
		return nil
	}
	known := false
	if gvk.Version != "" && gvk.Kind != "" && clientgoscheme.Scheme.Recognizes(gvk) {
		stub := &unstructured.Unstructured{Object: map[string]any{}}
		stub.SetGroupVersionKind(gvk)
		_, err := s.builtin.ObjectToTyped(stub)
		known = err == nil
	}
	s.builtinKinds.Store(gvk, known)
	if known {
		return s.builtin
	}
	return nil
}

// buildCRDTypeConverter builds the type converter kube-apiserver's MAP plugin
// would build from /openapi/v3/apis/<group>/<version>: the document comes from
// apiextensions-apiserver's builder with the options of its openapiv3 controller,
// goes through JSON as it does on the wire, and is converted with
// preserveUnknownFields=false.
func buildCRDTypeConverter(crd *apiextensionsv1.CustomResourceDefinition, version string) (managedfields.TypeConverter, error) {
	doc, err := builder.BuildOpenAPIV3(crd, version, builder.Options{V2: false, IncludeSelectableFields: true})
	if err != nil {
		return nil, fmt.Errorf("building OpenAPI v3 for %s version %s: %w", crd.Name, version, err)
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("encoding OpenAPI v3 for %s version %s: %w", crd.Name, version, err)
	}
	var served spec3.OpenAPI
	if err := json.Unmarshal(raw, &served); err != nil {
		return nil, fmt.Errorf("decoding OpenAPI v3 for %s version %s: %w", crd.Name, version, err)
	}
	if served.Components == nil {
		return nil, fmt.Errorf("OpenAPI v3 for %s version %s has no components", crd.Name, version)
	}
	tc, err := managedfields.NewTypeConverter(served.Components.Schemas, false)
	if err != nil {
		return nil, fmt.Errorf("type converter for %s version %s: %w", crd.Name, version, err)
	}
	return tc, nil
}

// DeclType returns the CEL declaration type of a CRD kind's schema, for static
// cost estimation: it is the structural schema of the served version, with
// apiVersion, kind and metadata.name/generateName declared (as for CRD
// validation rules), carrying maxItems, maxLength and maxProperties where the
// schema sets them. Built-in kinds have no OpenAPI schema available offline here
// (client-go embeds only the structured-merge-diff schema), so for them, as for
// unknown kinds, the error wraps ErrNoSchema.
func (s *Schemas) DeclType(gvk schema.GroupVersionKind) (*apiservercel.DeclType, error) {
	s.mu.RLock()
	e := s.kinds[gvk]
	s.mu.RUnlock()
	if e == nil {
		if s.builtinConverter(gvk) != nil {
			return nil, fmt.Errorf("%w for built-in kind %s", ErrNoSchema, gvk)
		}
		return nil, fmt.Errorf("%w for kind %s", ErrNoSchema, gvk)
	}
	e.declOnce.Do(func() { e.decl, e.declErr = buildDeclType(e.crd, e.version) })
	return e.decl, e.declErr
}

func buildDeclType(crd *apiextensionsv1.CustomResourceDefinition, version string) (*apiservercel.DeclType, error) {
	gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: version, Kind: crd.Spec.Names.Kind}
	var v1schema *apiextensionsv1.CustomResourceValidation
	for i := range crd.Spec.Versions {
		if crd.Spec.Versions[i].Name == version {
			v1schema = crd.Spec.Versions[i].Schema
		}
	}
	if v1schema == nil || v1schema.OpenAPIV3Schema == nil {
		return nil, fmt.Errorf("%w for kind %s: version %s has no openAPIV3Schema", ErrNoSchema, gvk, version)
	}
	internal := &apiextensionsinternal.CustomResourceValidation{}
	if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(v1schema, internal, nil); err != nil {
		return nil, fmt.Errorf("converting schema of %s: %w", gvk, err)
	}
	ss, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, fmt.Errorf("structural schema of %s: %w", gvk, err)
	}
	decl := model.SchemaDeclType(model.WithTypeAndObjectMeta(ss), true)
	if decl == nil {
		return nil, fmt.Errorf("%w for kind %s: schema has no CEL declaration type", ErrNoSchema, gvk)
	}
	// Nested object types are named after their path below a per-kind root, so
	// several kinds can be registered in one CEL type provider.
	return decl.MaybeAssignTypeName(declTypeName(gvk)), nil
}

// declTypeName is the CEL type name of a kind's root DeclType.
func declTypeName(gvk schema.GroupVersionKind) string {
	return gvk.Group + "." + gvk.Version + "." + gvk.Kind
}
