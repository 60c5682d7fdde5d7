package scheme

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	apiextensionshelpers "k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/conversion"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apiextensions-apiserver/pkg/crdserverscheme"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	runtimejson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/versioning"
	fielderrors "k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/warning"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// CustomResources holds the CustomResourceDefinitions of a run and does to
// their objects what kube-apiserver's CRD handler
// (apiextensions-apiserver/pkg/apiserver/customresource_handler.go) does:
// the decoding of request bodies (pruning, coercion of metadata, structural
// defaulting), the defaulting after every mutation of a mutating admission
// policy, the registry's preparation and validation of CREATE and UPDATE
// (OpenAPI schema, x-kubernetes-validations with ratcheting, metadata), and
// the round trip through storage.
//
// Every step is the upstream code, wired as getOrCreateServingInfoFor wires
// it. Where that wiring is unexported (unstructuredSchemaCoercer,
// schemaCoercingDecoder, schemaCoercingConverter, unstructuredDefaulter,
// unstructuredCreator), it is reproduced below, call for call, because the
// only way to reach it upstream is through a running apiextensions-apiserver.
//
// The zero value is ready for use; a CustomResources is safe for concurrent
// use. No method modifies its input objects.
type CustomResources struct {
	mu sync.RWMutex
	// crds holds the CRDs by metadata.name.
	crds map[string]*customResourceDefinition
	// served holds the served versions of every CRD by kind.
	served map[schema.GroupVersionKind]*customResourceVersion
	// shadowed holds the served kinds that client-go's scheme also has a
	// Go type for (a CRD serving WatchEvent in internal.apiserver.k8s.io/
	// v1alpha1, a group version kube-apiserver does not serve by default:
	// metav1.AddToGroupVersion registers WatchEvent and the option kinds in
	// every built-in group version); nil when there are none, which is
	// nearly always. kube-apiserver serves such a kind with its CRD handler,
	// so Scheme.Recognizes answers false for it. Read without the lock.
	shadowed atomic.Pointer[map[schema.GroupVersionKind]bool]
}

// NewCustomResources returns an empty CustomResources (as the zero value).
func NewCustomResources() *CustomResources { return &CustomResources{} }

// customResourceDefinition is what the CRD handler's crdInfo holds for one
// CRD, as far as objects are concerned.
type customResourceDefinition struct {
	name string
	gk   schema.GroupKind
	// resource is the plural resource, as Store.Update qualifies its errors.
	resource schema.GroupResource
	// structural holds the structural schema of every version with a
	// schema, defaults pruned (nil values are versions without a schema,
	// as upstream; with preserveUnknownFields the schema as it is).
	structural map[string]*structuralschema.Structural
	// defaults holds the defaultTree of every version's structural
	// schema (a nil tree: none, or no default in it).
	defaults              map[string]*defaultTree
	preserveUnknownFields bool
	storageVersion        string
	// webhookConversion tells that versions are converted by a webhook,
	// which is not simulated: conversions between different versions fail.
	webhookConversion bool
	versions          map[string]*customResourceVersion
	// converter is the CRD handler's safe converter (the request scopes'
	// ObjectConvertor).
	converter runtime.ObjectConvertor
}

// customResourceVersion is the request scope and storage of one version.
type customResourceVersion struct {
	crd *customResourceDefinition
	gvk schema.GroupVersionKind
	// strategy is customresource.NewStrategy's.
	strategy crStrategy
	// status is customresource.NewStatusStrategy's, the strategy of the
	// status subresource; nil when the version has none.
	status crStrategy
	// request decodes a request body strictly (fieldValidation Strict or
	// Warn), requestLax without tracking unknown fields (Ignore).
	request, requestLax runtime.Decoder
	// storage is the codec of crdConversionRESTOptionsGetter: encoding to
	// the storage version, decoding to this version.
	storage runtime.Codec
}

// crStrategy is the registry strategy of custom resources (an unexported
// type upstream, customresource.customResourceStrategy).
type crStrategy interface {
	rest.RESTCreateStrategy
	rest.RESTUpdateStrategy
}

var crdGroupKind = schema.GroupKind{Group: apiextensionsv1.GroupName, Kind: "CustomResourceDefinition"}

// CRDFromObject converts a CustomResourceDefinition given as
// *apiextensionsv1.CustomResourceDefinition or *unstructured.Unstructured
// (apiextensions.k8s.io/v1) to the typed form, defaulted as kube-apiserver
// stores it. The input is not modified. applyconfig.Schemas.AddCRD does
// the same (its unexported toCRD) and could call this instead.
func CRDFromObject(obj runtime.Object) (*apiextensionsv1.CustomResourceDefinition, error) {
	var crd *apiextensionsv1.CustomResourceDefinition
	switch o := obj.(type) {
	case *apiextensionsv1.CustomResourceDefinition:
		if o == nil {
			return nil, errors.New("adding CustomResourceDefinition: nil object")
		}
		crd = o.DeepCopy()
	case *unstructured.Unstructured:
		if o == nil {
			return nil, errors.New("adding CustomResourceDefinition: nil object")
		}
		if gvk := o.GroupVersionKind(); gvk != apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition") {
			return nil, fmt.Errorf("adding CustomResourceDefinition %s: apiVersion/kind is %s, want apiextensions.k8s.io/v1 CustomResourceDefinition", o.GetName(), gvk)
		}
		crd = &apiextensionsv1.CustomResourceDefinition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.UnstructuredContent(), crd); err != nil {
			return nil, fmt.Errorf("decoding CustomResourceDefinition %s: %w", o.GetName(), err)
		}
	default:
		return nil, fmt.Errorf("adding CustomResourceDefinition: unsupported object type %T", obj)
	}
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(crd)
	return crd, nil
}

// Add registers a CustomResourceDefinition (replacing one of the same
// name), given as *apiextensionsv1.CustomResourceDefinition or as
// *unstructured.Unstructured. A CRD kube-apiserver would refuse to create
// is refused with its 422 (`CustomResourceDefinition.apiextensions.k8s.io
// "<name>" is invalid: <field>: …`). Unlike kube-apiserver, the CRD needs no
// Established condition: the kind comes from spec.names, not from
// status.acceptedNames.
func (c *CustomResources) Add(obj runtime.Object) (err error) {
	defer recoverAsError(&err, "adding CustomResourceDefinition")
	crd, err := CRDFromObject(obj)
	if err != nil {
		return err
	}
	internal := &apiextensionsinternal.CustomResourceDefinition{}
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(crd, internal, nil); err != nil {
		return fmt.Errorf("converting CustomResourceDefinition %s: %w", crd.Name, err)
	}
	if errs := crdvalidation.ValidateCustomResourceDefinition(context.Background(), internal); len(errs) > 0 {
		return apierrors.NewInvalid(crdGroupKind, crd.Name, errs)
	}
	info, err := newCustomResourceDefinition(crd)
	if err != nil {
		return err
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.crds == nil {
		c.crds = map[string]*customResourceDefinition{}
		c.served = map[schema.GroupVersionKind]*customResourceVersion{}
	}
	c.removeLocked(crd.Name)
	c.crds[crd.Name] = info
	for _, v := range crd.Spec.Versions {
		if v.Served {
			c.served[info.versions[v.Name].gvk] = info.versions[v.Name]
		}
	}
	c.shadowLocked()
	return nil
}

// shadowLocked recomputes shadowed from served; c.mu is held for writing.
func (c *CustomResources) shadowLocked() {
	var shadowed map[schema.GroupVersionKind]bool
	for gvk := range c.served {
		if clientgoscheme.Scheme.Recognizes(gvk) {
			if shadowed == nil {
				shadowed = map[schema.GroupVersionKind]bool{}
			}
			shadowed[gvk] = true
		}
	}
	if shadowed == nil {
		c.shadowed.Store(nil)
		return
	}
	c.shadowed.Store(&shadowed)
}

// Shadows tells whether gvk, a kind client-go's scheme has a Go type for,
// is served by a registered CRD instead (kube-apiserver's CRD handler
// serves it, as a custom resource). Lock-free: Scheme.Recognizes asks it
// on every call.
func (c *CustomResources) Shadows(gvk schema.GroupVersionKind) bool {
	if c == nil {
		return false
	}
	p := c.shadowed.Load()
	return p != nil && (*p)[gvk]
}

// Remove forgets the CustomResourceDefinition with the given metadata.name;
// an unknown name is a no-op.
func (c *CustomResources) Remove(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.removeLocked(name)
	c.shadowLocked()
}

func (c *CustomResources) removeLocked(name string) {
	info := c.crds[name]
	if info == nil {
		return
	}
	for _, v := range info.versions {
		if c.served[v.gvk] == v {
			delete(c.served, v.gvk)
		}
	}
	delete(c.crds, name)
}

// Recognizes tells whether gvk is a served version of a registered CRD.
func (c *CustomResources) Recognizes(gvk schema.GroupVersionKind) bool {
	return c.lookup(gvk) != nil
}

func (c *CustomResources) lookup(gvk schema.GroupVersionKind) *customResourceVersion {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.served[gvk]
}

func (c *CustomResources) version(gvk schema.GroupVersionKind) (*customResourceVersion, error) {
	if v := c.lookup(gvk); v != nil {
		return v, nil
	}
	return nil, fmt.Errorf("no CustomResourceDefinition serves %s", gvk)
}

// newCustomResourceDefinition builds what getOrCreateServingInfoFor builds
// for one CRD, in its order and with its calls.
func newCustomResourceDefinition(crd *apiextensionsv1.CustomResourceDefinition) (*customResourceDefinition, error) {
	storageVersion, err := apiextensionshelpers.GetCRDStorageVersion(crd)
	if err != nil {
		return nil, fmt.Errorf("CustomResourceDefinition %s: %w", crd.Name, err)
	}
	info := &customResourceDefinition{
		name:                  crd.Name,
		gk:                    schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind},
		resource:              schema.GroupResource{Group: crd.Spec.Group, Resource: crd.Spec.Names.Plural},
		structural:            map[string]*structuralschema.Structural{},
		defaults:              map[string]*defaultTree{},
		preserveUnknownFields: crd.Spec.PreserveUnknownFields,
		storageVersion:        storageVersion,
		webhookConversion:     crd.Spec.Conversion != nil && crd.Spec.Conversion.Strategy == apiextensionsv1.WebhookConverter,
		versions:              map[string]*customResourceVersion{},
	}
	for _, v := range crd.Spec.Versions {
		val, err := apiextensionshelpers.GetSchemaForVersion(crd, v.Name)
		if err != nil {
			return nil, fmt.Errorf("CustomResourceDefinition %s: %w", crd.Name, err)
		}
		if val == nil {
			continue
		}
		internalValidation := &apiextensionsinternal.CustomResourceValidation{}
		if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(val, internalValidation, nil); err != nil {
			return nil, fmt.Errorf("CustomResourceDefinition %s: spec.versions[%s].schema: %w", crd.Name, v.Name, err)
		}
		s, err := structuralschema.NewStructural(internalValidation.OpenAPIV3Schema)
		if !crd.Spec.PreserveUnknownFields && err != nil {
			return nil, fmt.Errorf("CustomResourceDefinition %s: spec.versions[%s].schema.openAPIV3Schema is not structural: %w", crd.Name, v.Name, err)
		}
		if !crd.Spec.PreserveUnknownFields {
			s = s.DeepCopy()
			if err := structuraldefaulting.PruneDefaults(s); err != nil {
				return nil, fmt.Errorf("CustomResourceDefinition %s: spec.versions[%s].schema: pruning defaults: %w", crd.Name, v.Name, err)
			}
		}
		info.structural[v.Name] = s
		info.defaults[v.Name] = newDefaultTree(s)
	}

	// The converter of the storage path. Only the None strategy is
	// simulated: for a webhook strategy the same-version "conversion" (which
	// only sets apiVersion) is done by the None converter, and a conversion
	// between versions is refused in convertCheck.
	convCRD := crd
	if info.webhookConversion {
		convCRD = crd.DeepCopy()
		convCRD.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
	}
	safeConverter, _, err := noneConverterFactory.NewConverter(convCRD)
	if err != nil {
		return nil, fmt.Errorf("CustomResourceDefinition %s: %w", crd.Name, err)
	}
	info.converter = safeConverter

	typer := crdserverscheme.NewUnstructuredObjectTyper()
	for _, v := range crd.Spec.Versions {
		if !v.Storage && !v.Served {
			continue
		}
		gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}
		validationSchema, err := apiextensionshelpers.GetSchemaForVersion(crd, v.Name)
		if err != nil {
			return nil, fmt.Errorf("CustomResourceDefinition %s: %w", crd.Name, err)
		}
		var internalSchemaProps *apiextensionsinternal.JSONSchemaProps
		var internalValidationSchema *apiextensionsinternal.CustomResourceValidation
		if validationSchema != nil {
			internalValidationSchema = &apiextensionsinternal.CustomResourceValidation{}
			if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(validationSchema, internalValidationSchema, nil); err != nil {
				return nil, fmt.Errorf("CustomResourceDefinition %s: spec.versions[%s].schema: %w", crd.Name, v.Name, err)
			}
			internalSchemaProps = internalValidationSchema.OpenAPIV3Schema
		}
		validator, _, err := apiservervalidation.NewSchemaValidator(internalSchemaProps)
		if err != nil {
			return nil, fmt.Errorf("CustomResourceDefinition %s: spec.versions[%s].schema: %w", crd.Name, v.Name, err)
		}

		subresources, err := apiextensionshelpers.GetSubresourcesForVersion(crd, v.Name)
		if err != nil {
			return nil, fmt.Errorf("CustomResourceDefinition %s: %w", crd.Name, err)
		}
		var statusSpec *apiextensionsinternal.CustomResourceSubresourceStatus
		var statusValidator apiservervalidation.SchemaValidator
		if subresources != nil && subresources.Status != nil {
			statusSpec = &apiextensionsinternal.CustomResourceSubresourceStatus{}
			if err := apiextensionsv1.Convert_v1_CustomResourceSubresourceStatus_To_apiextensions_CustomResourceSubresourceStatus(subresources.Status, statusSpec, nil); err != nil {
				return nil, fmt.Errorf("CustomResourceDefinition %s: spec.versions[%s].subresources.status: %w", crd.Name, v.Name, err)
			}
			if internalValidationSchema != nil && internalValidationSchema.OpenAPIV3Schema != nil && internalValidationSchema.OpenAPIV3Schema.Properties != nil {
				if statusSchema, ok := internalValidationSchema.OpenAPIV3Schema.Properties["status"]; ok {
					statusValidator, _, err = apiservervalidation.NewSchemaValidator(&statusSchema)
					if err != nil {
						return nil, fmt.Errorf("CustomResourceDefinition %s: spec.versions[%s].schema (status): %w", crd.Name, v.Name, err)
					}
				}
			}
		}
		var scaleSpec *apiextensionsinternal.CustomResourceSubresourceScale
		if subresources != nil && subresources.Scale != nil {
			scaleSpec = &apiextensionsinternal.CustomResourceSubresourceScale{}
			if err := apiextensionsv1.Convert_v1_CustomResourceSubresourceScale_To_apiextensions_CustomResourceSubresourceScale(subresources.Scale, scaleSpec, nil); err != nil {
				return nil, fmt.Errorf("CustomResourceDefinition %s: spec.versions[%s].subresources.scale: %w", crd.Name, v.Name, err)
			}
		}

		strategy := customresource.NewStrategy(
			typer,
			crd.Spec.Scope == apiextensionsv1.NamespaceScoped,
			gvk,
			validator,
			statusValidator,
			info.structural[v.Name],
			statusSpec,
			scaleSpec,
			v.SelectableFields,
		)

		gv := gvk.GroupVersion()
		// The request scope's decoder: unstructuredNegotiatedSerializer.DecoderToVersion.
		requestDecoder := func(strict bool) runtime.Decoder {
			serializer := runtimejson.NewSerializerWithOptions(runtimejson.DefaultMetaFactory, unstructuredCreator{}, typer, runtimejson.SerializerOptions{Strict: strict})
			d := schemaCoercingDecoder{delegate: serializer, validator: unstructuredSchemaCoercer{
				structuralSchemas: info.structural, structuralSchemaGK: info.gk,
				preserveUnknownFields: info.preserveUnknownFields, returnUnknownFieldPaths: strict,
			}}
			return versioning.NewCodec(nil, d, runtime.UnsafeObjectConvertor(unstructuredScheme), unstructuredScheme, unstructuredScheme,
				unstructuredDefaulter{delegate: unstructuredScheme, structuralSchemas: info.structural, structuralSchemaGK: info.gk},
				nil, gv, "unstructuredNegotiatedSerializer")
		}
		// The storage codec: crdConversionRESTOptionsGetter.GetRESTOptions
		// over NewCRDRESTOptionsGetter's JSON codec (CBORServingAndStorage
		// is alpha and off in 1.37).
		base := runtime.NewCodec(unstructured.UnstructuredJSONScheme, unstructured.UnstructuredJSONScheme)
		storageDecoder := schemaCoercingDecoder{delegate: base, validator: unstructuredSchemaCoercer{
			dropInvalidMetadata: true, repairGeneration: true,
			structuralSchemas: info.structural, structuralSchemaGK: info.gk, preserveUnknownFields: info.preserveUnknownFields,
		}}
		storageConverter := schemaCoercingConverter{delegate: convertCheck{delegate: safeConverter, crd: info}, validator: unstructuredSchemaCoercer{
			structuralSchemas: info.structural, structuralSchemaGK: info.gk, preserveUnknownFields: info.preserveUnknownFields,
		}}
		storageCodec := versioning.NewCodec(base, storageDecoder, storageConverter, unstructuredCreator{}, typer,
			&unstructuredDefaulter{delegate: unstructuredScheme, structuralSchemaGK: info.gk, structuralSchemas: info.structural},
			schema.GroupVersion{Group: crd.Spec.Group, Version: storageVersion}, gv, "crdRESTOptions")

		var status crStrategy
		if statusSpec != nil {
			// customresource.NewStorage's status REST.
			status = customresource.NewStatusStrategy(strategy)
		}
		info.versions[v.Name] = &customResourceVersion{
			crd:        info,
			gvk:        gvk,
			strategy:   strategy,
			status:     status,
			request:    requestDecoder(true),
			requestLax: requestDecoder(false),
			storage:    storageCodec,
		}
	}
	return info, nil
}

// noneConverterFactory makes the CRD handler's converters; only CRDs with
// the None strategy are given to it.
var noneConverterFactory = func() *conversion.CRConverterFactory {
	f, err := conversion.NewCRConverterFactory(nil, nil)
	if err != nil {
		panic(fmt.Sprintf("apiextensions conversion factory: %v", err))
	}
	return f
}()

// unstructuredScheme stands for apiextensions-apiserver's Scheme where the
// CRD handler uses it for custom resources: converting an Unstructured to
// an Unstructured is a straight copy and defaulting does nothing, as in any
// runtime.Scheme.
var unstructuredScheme = runtime.NewScheme()

// DecodeRequest is what the CRD handler does to the body of a CREATE or
// UPDATE of kind gvk (the URL's version) before admission: the request
// scope's decoder (JSON decoding, metadata coercion, pruning of unknown
// fields unless preserved, removal of non-nullable nulls, structural
// defaulting) and the handler's check of the body's apiVersion.
//
// fieldValidation is the request's (Strict, Warn, Ignore; empty is the
// server's default, Warn). With Warn the unknown fields come back as
// warnings (`unknown field "spec.x"`); with Strict they are a 400:
// `<Kind> in version "<v>" cannot be handled as a <Kind>: strict decoding
// error: unknown field "spec.x"`. Other errors are the 400s the handler
// answers. The object is given decoded (numbers as int64 and float64); it
// is encoded as JSON to run the decoder, so duplicate keys in the original
// body cannot be seen here.
func (c *CustomResources) DecodeRequest(obj map[string]any, gvk schema.GroupVersionKind, fieldValidation string) (out map[string]any, warnings []string, err error) {
	defer recoverAsError(&err, "decoding "+gvk.String())
	v, err := c.version(gvk)
	if err != nil {
		return nil, nil, err
	}
	body, err := json.Marshal(obj)
	if err != nil {
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("%s: %v", v.crd.name, err))
	}
	decoder := v.request
	switch fieldValidation {
	case "", "Warn", "Strict":
	case "Ignore":
		decoder = v.requestLax
	default:
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("fieldValidation: Unsupported value: %q: supported values: \"Ignore\", \"Strict\", \"Warn\"", fieldValidation))
	}
	original := &unstructured.Unstructured{}
	original.SetGroupVersionKind(v.gvk)
	defaultGVK := v.gvk
	decoded, decodedGVK, err := decoder.Decode(body, &defaultGVK, original)
	if err != nil {
		strictError, isStrict := runtime.AsStrictDecodingError(err)
		switch {
		case isStrict && decoded != nil && fieldValidation != "Strict":
			for _, e := range strictError.Errors() {
				warnings = append(warnings, e.Error())
			}
		default:
			return nil, nil, transformDecodeError(err, v.gvk, decodedGVK, body)
		}
	}
	if decodedGVK == nil || decodedGVK.GroupVersion() != v.gvk.GroupVersion() {
		var objGV schema.GroupVersion
		if decodedGVK != nil {
			objGV = decodedGVK.GroupVersion()
		}
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%v)", objGV.String(), v.gvk.GroupVersion().String()))
	}
	u, ok := decoded.(*unstructured.Unstructured)
	if !ok {
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("%s: decoded %T, not an object", v.crd.name, decoded))
	}
	return u.Object, warnings, nil
}

// transformDecodeError is endpoints/handlers.transformDecodeError for the
// CRD request scope (the object decoded into is of the scope's kind).
func transformDecodeError(baseErr error, scopeKind schema.GroupVersionKind, gvk *schema.GroupVersionKind, body []byte) error {
	if gvk != nil && len(gvk.Kind) > 0 {
		return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", gvk.Kind, gvk.Version, scopeKind.Kind, baseErr))
	}
	return apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type %s): %v (%s)", scopeKind.Kind, baseErr, summarizeData(body, 30)))
}

// summarizeData is endpoints/handlers.summarizeData.
func summarizeData(data []byte, maxLength int) string {
	switch {
	case len(data) == 0:
		return "<empty>"
	case data[0] == '{':
		if len(data) > maxLength {
			return string(data[:maxLength]) + " ..."
		}
		return string(data)
	default:
		if len(data) > maxLength {
			return hex.EncodeToString(data[:maxLength]) + " ..."
		}
		return hex.EncodeToString(data)
	}
}

// Default is the request scope's ObjectDefaulter (the CRD handler's
// unstructuredDefaulter), which the MutatingAdmissionPolicy dispatcher
// applies after every mutation (dispatchOne: o.GetObjectDefaulter().Default):
// structural defaulting with the schema of the object's own version, and
// nothing for objects whose apiVersion/kind are not of the CRD's group and
// kind. It neither prunes nor drops nulls. gvk names the CRD (the request's
// kind). obj is never written into: the result is obj itself when
// defaulting changes nothing, and otherwise shares with obj the subtrees
// defaulting left alone (defaultShared; defaultReference is the
// definition, a copy of obj defaulted).
func (c *CustomResources) Default(obj map[string]any, gvk schema.GroupVersionKind) (out map[string]any, err error) {
	defer recoverAsError(&err, "defaulting "+gvk.String())
	v, err := c.version(gvk)
	if err != nil {
		return nil, err
	}
	if out, ok := v.defaultShared(obj); ok {
		return out, nil
	}
	return c.defaultReference(obj, gvk)
}

// defaultReference is Default on a deep copy of obj, through upstream's
// unstructuredDefaulter: the definition of Default's result, and its
// fallback.
func (c *CustomResources) defaultReference(obj map[string]any, gvk schema.GroupVersionKind) (out map[string]any, err error) {
	defer recoverAsError(&err, "defaulting "+gvk.String())
	v, err := c.version(gvk)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(obj)}
	unstructuredDefaulter{delegate: unstructuredScheme, structuralSchemas: v.crd.structural, structuralSchemaGK: v.crd.gk}.Default(u)
	return u.Object, nil
}

// Validate is what the registry does with an admitted object of kind gvk
// before validating admission and storage: for admission.Create the
// Store's system fields and rest.BeforeCreate, for admission.Update
// rest.BeforeUpdate with old (the stored object), with the custom resource
// strategy (PrepareForCreate/PrepareForUpdate, then OpenAPI schema
// validation, embedded metadata, list-type invariants and
// x-kubernetes-validations under the per-request CEL cost budget, with
// ratcheting on UPDATE), preceded on UPDATE by Store.Update's
// resourceVersion check when old has one (422 without a resourceVersion,
// 409 when it is not old's). The error is the *apierrors.StatusError
// kube-apiserver answers (422 `<Kind>.<group> "<name>" is invalid: …`,
// 400 for a namespace mismatch). namespace is the request's.
func (c *CustomResources) Validate(ctx context.Context, op admission.Operation, obj, old map[string]any, gvk schema.GroupVersionKind, namespace string) (warnings []string, err error) {
	_, warnings, err = c.prepare(ctx, op, "", obj, old, gvk, namespace)
	return warnings, err
}

// Persisted is the outcome of Persist.
type Persisted struct {
	// Stored is the object as written to storage (in the storage version).
	Stored map[string]any
	// Returned is the object as every read gives it back, and as the
	// response to the write: in the request's version.
	Returned map[string]any
	// Warnings are the registry's warnings (finalizer names).
	Warnings []string
}

// Persist is Validate followed by the storage round trip (Store) of the
// prepared object: what a CREATE or UPDATE of an admitted custom resource
// leaves in storage and answers. Store's result is taken as it is: no
// uid, creationTimestamp, resourceVersion or managedFields are invented
// (the values upstream gives them are not reproducible), and an UPDATE that
// changes nothing is written like any other.
func (c *CustomResources) Persist(ctx context.Context, op admission.Operation, obj, old map[string]any, gvk schema.GroupVersionKind, namespace string) (p Persisted, err error) {
	return c.persist(ctx, op, "", obj, old, gvk, namespace)
}

// PersistSubresource is Persist for an UPDATE of a subresource of a custom
// resource that carries its kind: `status`, through the status REST's
// strategy (customresource.NewStatusStrategy: everything outside .status
// is reset to old's, the status schema validated). ok is false for a
// subresource the CRD's version does not serve with its own kind (scale's
// kind is autoscaling/v1 Scale) or does not have.
func (c *CustomResources) PersistSubresource(ctx context.Context, subresource string, obj, old map[string]any, gvk schema.GroupVersionKind, namespace string) (p Persisted, ok bool, err error) {
	v, err := c.version(gvk)
	if err != nil || subresource != "status" || v.status == nil {
		return Persisted{}, false, err
	}
	p, err = c.persist(ctx, admission.Update, subresource, obj, old, gvk, namespace)
	return p, true, err
}

func (c *CustomResources) persist(ctx context.Context, op admission.Operation, subresource string, obj, old map[string]any, gvk schema.GroupVersionKind, namespace string) (p Persisted, err error) {
	prepared, warnings, err := c.prepare(ctx, op, subresource, obj, old, gvk, namespace)
	if err != nil {
		return Persisted{Warnings: warnings}, err
	}
	stored, returned, err := c.Store(prepared, gvk)
	return Persisted{Stored: stored, Returned: returned, Warnings: warnings}, err
}

// prepare runs BeforeCreate or BeforeUpdate on a copy of obj and returns
// that copy (system fields the input lacked removed again), with the
// strategy of the resource or of its status subresource.
func (c *CustomResources) prepare(ctx context.Context, op admission.Operation, subresource string, obj, old map[string]any, gvk schema.GroupVersionKind, namespace string) (out map[string]any, warnings []string, err error) {
	defer recoverAsError(&err, "validating "+gvk.String())
	v, err := c.version(gvk)
	if err != nil {
		return nil, nil, err
	}
	st := v.strategy
	if subresource == "status" && v.status != nil {
		st = v.status
	}
	if ctx == nil {
		ctx = context.Background()
	}
	rec := &warningRecorder{}
	ctx = warning.WithWarningRecorder(genericapirequest.WithNamespace(ctx, namespace), rec)
	u := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(obj)}
	switch op {
	case admission.Create:
		// Store.create: system fields first, and a name from generateName.
		_, hadUID := nestedField(obj, "metadata", "uid")
		_, hadCreated := nestedField(obj, "metadata", "creationTimestamp")
		rest.FillObjectMetaSystemFields(u)
		if len(u.GetGenerateName()) > 0 && len(u.GetName()) == 0 {
			u.SetName(st.GenerateName(u.GetGenerateName()))
		}
		err = rest.BeforeCreate(st, ctx, u)
		if meta, ok := u.Object["metadata"].(map[string]any); ok {
			if !hadUID {
				delete(meta, "uid")
			}
			if !hadCreated {
				delete(meta, "creationTimestamp")
			}
		}
	case admission.Update:
		if old == nil {
			return nil, nil, fmt.Errorf("validating %s: UPDATE without an old object", gvk)
		}
		oldU := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(old)}
		if err := v.crd.checkResourceVersion(u, oldU); err != nil {
			return nil, nil, err
		}
		err = rest.BeforeUpdate(st, ctx, u, oldU)
	default:
		return nil, nil, fmt.Errorf("validating %s: operation %s is neither CREATE nor UPDATE", gvk, op)
	}
	return u.Object, rec.warnings, err
}

// checkResourceVersion is Store.Update's optimistic concurrency check
// (custom resources do not allow unconditional updates). A stored object
// always has a resourceVersion: an old object given without one (a file)
// is taken to have "1", and an update of it whose object has none either
// is taken to be at that version, as for built-in kinds (resourceVersions),
// so that the strategy's metadata validation finds both set.
func (d *customResourceDefinition) checkResourceVersion(obj, old *unstructured.Unstructured) error {
	versioner := storage.APIObjectVersioner{}
	existing, err := versioner.ObjectResourceVersion(old)
	if err != nil {
		return nil
	}
	rv, err := versioner.ObjectResourceVersion(obj)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	if existing == 0 {
		existing = 1
		old.SetResourceVersion("1")
		if rv == 0 {
			rv = 1
			obj.SetResourceVersion("1")
		}
	}
	if rv == 0 {
		qualifiedKind := schema.GroupKind{Group: d.resource.Group, Kind: d.resource.Resource}
		return apierrors.NewInvalid(qualifiedKind, obj.GetName(), fielderrors.ErrorList{fielderrors.Invalid(fielderrors.NewPath("metadata").Child("resourceVersion"), rv, "must be specified for an update")})
	}
	if rv != existing {
		return apierrors.NewConflict(d.resource, obj.GetName(), errors.New(genericregistry.OptimisticLockErrorMsg))
	}
	return nil
}

// Store is the round trip of an object of kind gvk through the CRD's
// storage (crdConversionRESTOptionsGetter's codec, as the etcd3 store
// uses it): stored is what is written (encoded in the storage version),
// returned what reading it back gives in gvk's version.
//
// Upstream prunes on this path only where it converts or decodes: the
// encoder converts (and so prunes, with the storage version's schema) only
// objects not already in the storage version (versioning codec doEncode),
// so unknown fields a mutating admission plugin added to an object of the
// storage version are written to etcd as they are; every decode from
// storage prunes them again (schemaCoercingDecoder, with
// dropInvalidMetadata), then defaults, then converts to the requested
// version (schemaCoercingConverter prunes again). resourceVersion and
// selfLink are cleared as the store prepares objects for storage.
func (c *CustomResources) Store(obj map[string]any, gvk schema.GroupVersionKind) (stored, returned map[string]any, err error) {
	defer recoverAsError(&err, "storing "+gvk.String())
	v, err := c.version(gvk)
	if err != nil {
		return nil, nil, err
	}
	u := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(obj)}
	if err := (storage.APIObjectVersioner{}).PrepareObjectForStorage(u); err != nil {
		return nil, nil, apierrors.NewInternalError(err)
	}
	data, err := runtime.Encode(v.storage, u)
	if err != nil {
		return nil, nil, apierrors.NewInternalError(err)
	}
	var written unstructured.Unstructured
	if err := written.UnmarshalJSON(data); err != nil {
		return nil, nil, apierrors.NewInternalError(err)
	}
	out := &unstructured.Unstructured{}
	out.SetGroupVersionKind(v.gvk)
	if err := runtime.DecodeInto(v.storage, data, out); err != nil {
		return nil, nil, apierrors.NewInternalError(err)
	}
	return written.Object, out.Object, nil
}

// StorageVersion returns the storage version of the CRD serving gvk.
func (c *CustomResources) StorageVersion(gvk schema.GroupVersionKind) (string, error) {
	v, err := c.version(gvk)
	if err != nil {
		return "", err
	}
	return v.crd.storageVersion, nil
}

// ConvertSubresourceResult is what mutating admission policy's dispatchOne
// does with a mutation's result on a subresource of a custom resource that
// carries another kind (a CRD's `scale`: autoscaling/v1 Scale): the request
// is served with the CRD handler's ObjectInterfaces and its object is
// typed, so the result is converted back to the request kind's
// group/version with the CR converter, which refuses every group/version
// but the CRD's (`request to convert CR to an invalid group/version:
// autoscaling/v1`). ok is false when no registered CRD serves resource
// (a built-in resource: not this path). The error is the converter's.
func (c *CustomResources) ConvertSubresourceResult(resource schema.GroupVersionResource, obj map[string]any, kind schema.GroupVersionKind) (ok bool, err error) {
	c.mu.RLock()
	var crd *customResourceDefinition
	for _, d := range c.crds {
		if d.resource == resource.GroupResource() {
			crd = d
			break
		}
	}
	c.mu.RUnlock()
	if crd == nil || crd.converter == nil {
		return false, nil
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetGroupVersionKind(kind)
	_, err = crd.converter.ConvertToVersion(u, kind.GroupVersion())
	return true, err
}

// CRDs returns the names of the registered CRDs, sorted.
func (c *CustomResources) CRDs() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return slices.Sorted(maps.Keys(c.crds))
}

func nestedField(obj map[string]any, path ...string) (any, bool) {
	var cur any = obj
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[p]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// recoverAsError turns a panic of upstream code on bad input into an
// error naming what was being done.
func recoverAsError(err *error, what string) {
	if r := recover(); r != nil {
		*err = apierrors.NewInternalError(fmt.Errorf("%s: %v", what, r))
	}
}

// convertCheck refuses the conversions a webhook would do: mutatis does
// not call conversion webhooks.
type convertCheck struct {
	delegate runtime.ObjectConvertor
	crd      *customResourceDefinition
}

func (c convertCheck) check(from schema.GroupVersionKind, to schema.GroupVersion) error {
	if c.crd.webhookConversion && from.GroupVersion() != to {
		return fmt.Errorf("CustomResourceDefinition %s: conversion from %s to %s needs the conversion webhook, which is not simulated", c.crd.name, from.GroupVersion(), to)
	}
	return nil
}

func (c convertCheck) Convert(in, out, context any) error {
	if i, ok := in.(runtime.Object); ok {
		if o, ok := out.(runtime.Object); ok {
			if err := c.check(i.GetObjectKind().GroupVersionKind(), o.GetObjectKind().GroupVersionKind().GroupVersion()); err != nil {
				return err
			}
		}
	}
	return c.delegate.Convert(in, out, context)
}

func (c convertCheck) ConvertToVersion(in runtime.Object, gv runtime.GroupVersioner) (runtime.Object, error) {
	from := in.GetObjectKind().GroupVersionKind()
	if to, ok := gv.KindForGroupVersionKinds([]schema.GroupVersionKind{from}); ok {
		if err := c.check(from, to.GroupVersion()); err != nil {
			return nil, err
		}
	}
	return c.delegate.ConvertToVersion(in, gv)
}

func (c convertCheck) ConvertFieldLabel(gvk schema.GroupVersionKind, label, value string) (string, string, error) {
	return c.delegate.ConvertFieldLabel(gvk, label, value)
}

// The types below reproduce unexported wiring of
// apiextensions-apiserver/pkg/apiserver/customresource_handler.go (v0.37.1)
// statement for statement; the algorithms they call are upstream's.

// unstructuredCreator is customresource_handler.go's.
type unstructuredCreator struct{}

func (unstructuredCreator) New(kind schema.GroupVersionKind) (runtime.Object, error) {
	ret := &unstructured.Unstructured{}
	ret.SetGroupVersionKind(kind)
	return ret, nil
}

// unstructuredDefaulter is customresource_handler.go's.
type unstructuredDefaulter struct {
	delegate           runtime.ObjectDefaulter
	structuralSchemas  map[string]*structuralschema.Structural // by version
	structuralSchemaGK schema.GroupKind
}

func (d unstructuredDefaulter) Default(in runtime.Object) {
	u, ok := in.(runtime.Unstructured)
	if !ok || u.GetObjectKind().GroupVersionKind().GroupKind() != d.structuralSchemaGK {
		d.delegate.Default(in)
		return
	}
	structuraldefaulting.Default(u.UnstructuredContent(), d.structuralSchemas[u.GetObjectKind().GroupVersionKind().Version])
}

// schemaCoercingDecoder is customresource_handler.go's.
type schemaCoercingDecoder struct {
	delegate  runtime.Decoder
	validator unstructuredSchemaCoercer
}

func (d schemaCoercingDecoder) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	var decodingStrictErrs []error
	obj, gvk, err := d.delegate.Decode(data, defaults, into)
	if err != nil {
		decodeStrictErr, ok := runtime.AsStrictDecodingError(err)
		if !ok || obj == nil {
			return nil, gvk, err
		}
		decodingStrictErrs = decodeStrictErr.Errors()
	}
	var unknownFields []string
	if u, ok := obj.(*unstructured.Unstructured); ok {
		unknownFields, err = d.validator.apply(u)
		if err != nil {
			return nil, gvk, err
		}
	}
	if d.validator.returnUnknownFieldPaths && (len(decodingStrictErrs) > 0 || len(unknownFields) > 0) {
		for _, unknownField := range unknownFields {
			decodingStrictErrs = append(decodingStrictErrs, fmt.Errorf(`unknown field "%s"`, unknownField))
		}
		return obj, gvk, runtime.NewStrictDecodingError(decodingStrictErrs)
	}
	return obj, gvk, nil
}

// schemaCoercingConverter is customresource_handler.go's.
type schemaCoercingConverter struct {
	delegate  runtime.ObjectConvertor
	validator unstructuredSchemaCoercer
}

func (v schemaCoercingConverter) Convert(in, out, context any) error {
	if err := v.delegate.Convert(in, out, context); err != nil {
		return err
	}
	if u, ok := out.(*unstructured.Unstructured); ok {
		if _, err := v.validator.apply(u); err != nil {
			return err
		}
	}
	return nil
}

func (v schemaCoercingConverter) ConvertToVersion(in runtime.Object, gv runtime.GroupVersioner) (runtime.Object, error) {
	out, err := v.delegate.ConvertToVersion(in, gv)
	if err != nil {
		return nil, err
	}
	if u, ok := out.(*unstructured.Unstructured); ok {
		if _, err := v.validator.apply(u); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (v schemaCoercingConverter) ConvertFieldLabel(gvk schema.GroupVersionKind, label, value string) (string, string, error) {
	return v.delegate.ConvertFieldLabel(gvk, label, value)
}

// unstructuredSchemaCoercer is customresource_handler.go's: metadata
// coercion, pruning of unknown fields and of non-nullable nulls.
type unstructuredSchemaCoercer struct {
	dropInvalidMetadata bool
	repairGeneration    bool

	structuralSchemas       map[string]*structuralschema.Structural
	structuralSchemaGK      schema.GroupKind
	preserveUnknownFields   bool
	returnUnknownFieldPaths bool
}

func (v *unstructuredSchemaCoercer) apply(u *unstructured.Unstructured) (unknownFieldPaths []string, err error) {
	kind, foundKind, err := unstructured.NestedString(u.UnstructuredContent(), "kind")
	if err != nil {
		return nil, err
	}
	apiVersion, foundApiVersion, err := unstructured.NestedString(u.UnstructuredContent(), "apiVersion")
	if err != nil {
		return nil, err
	}
	objectMeta, foundObjectMeta, metaUnknownFields, err := schemaobjectmeta.GetObjectMetaWithOptions(u.Object, schemaobjectmeta.ObjectMetaOptions{
		DropMalformedFields:     v.dropInvalidMetadata,
		ReturnUnknownFieldPaths: v.returnUnknownFieldPaths,
	})
	if err != nil {
		return nil, err
	}
	unknownFieldPaths = append(unknownFieldPaths, metaUnknownFields...)

	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, err
	}

	if gv.Group == v.structuralSchemaGK.Group && kind == v.structuralSchemaGK.Kind {
		if !v.preserveUnknownFields {
			pruneOpts := structuralschema.UnknownFieldPathOptions{}
			if v.returnUnknownFieldPaths {
				pruneOpts.TrackUnknownFieldPaths = true
			}
			unknownFieldPaths = append(unknownFieldPaths, structuralpruning.PruneWithOptions(u.Object, v.structuralSchemas[gv.Version], true, pruneOpts)...)
			structuraldefaulting.PruneNonNullableNullsWithoutDefaults(u.Object, v.structuralSchemas[gv.Version])
		}

		err, paths := schemaobjectmeta.CoerceWithOptions(nil, u.Object, v.structuralSchemas[gv.Version], false, schemaobjectmeta.CoerceOptions{
			DropInvalidFields:       v.dropInvalidMetadata,
			ReturnUnknownFieldPaths: v.returnUnknownFieldPaths,
		})
		if err != nil {
			return nil, err
		}
		unknownFieldPaths = append(unknownFieldPaths, paths...)

		if v.repairGeneration && objectMeta.Generation == 0 {
			objectMeta.Generation = 1
		}
	}

	if foundKind {
		u.SetKind(kind)
	}
	if foundApiVersion {
		u.SetAPIVersion(apiVersion)
	}
	if foundObjectMeta {
		if err := schemaobjectmeta.SetObjectMeta(u.Object, objectMeta); err != nil {
			return nil, err
		}
	}
	return unknownFieldPaths, nil
}
