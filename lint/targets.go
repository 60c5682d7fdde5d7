package lint

import (
	"fmt"
	"sort"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	upstream "k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"

	"github.com/mutatis-dev/mutatis/applyconfig"
	"github.com/mutatis-dev/mutatis/manifest"
	"github.com/mutatis-dev/mutatis/matching"
)

// maxKinds bounds the kinds a policy's expressions are checked against, as
// kube-apiserver's type checking does (maxTypesToCheck).
const maxKinds = 10

// Checker runs the static checks against the schemas of the built-in kinds
// and of the CustomResourceDefinitions it was given. It is not safe for
// concurrent use.
type Checker struct {
	table   *matching.Table
	schemas *applyconfig.Schemas
	kinds   map[schema.GroupVersionKind]*kindSchema
	// envs are the typed CEL environments built for kinds' schemas.
	envs typedEnvs
	// objects are the other objects loaded (params, CRDs, ...).
	objects []manifest.Object
	// resources tells whether --resources were given: then a paramKind
	// no file supplies is worth a warning.
	resources bool
	// vapTypeChecker is kube-controller-manager's type checker of
	// ValidatingAdmissionPolicies over the same kinds (typeChecker).
	vapTypeChecker *upstream.TypeChecker
}

// kindSchema is one kind's structured-merge-diff schema, its root type and
// the CEL declaration type built from it.
type kindSchema struct {
	gvk  schema.GroupVersionKind
	s    *smdschema.Schema
	root smdschema.TypeRef
	decl *declTypes
	tc   managedfields.TypeConverter
}

// NewChecker returns a Checker over the built-in resources kube-apiserver
// 1.37 serves by default and the CustomResourceDefinitions among objects
// (those that cannot be read are skipped: lint reports them already).
// resources tells that objects include the cluster's objects given with
// --resources (params among them).
func NewChecker(objects []manifest.Object, resources bool) *Checker {
	c := &Checker{
		table:     matching.DefaultTable(),
		schemas:   applyconfig.NewSchemas(),
		kinds:     map[schema.GroupVersionKind]*kindSchema{},
		envs:      typedEnvs{},
		objects:   objects,
		resources: resources,
	}
	for _, o := range objects {
		if o.Object.GetKind() != "CustomResourceDefinition" {
			continue
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object.Object, crd); err != nil {
			continue
		}
		if err := c.schemas.AddCRD(o.Object); err != nil {
			continue
		}
		_ = c.table.AddCRD(crd) // a conflicting CRD is reported by cluster loading
	}
	return c
}

// schemaOf returns the schema of gvk, or nil when it has none.
func (c *Checker) schemaOf(gvk schema.GroupVersionKind) *kindSchema {
	if k, ok := c.kinds[gvk]; ok {
		return k
	}
	var k *kindSchema
	if tc, err := c.schemas.TypeConverter(gvk); err == nil {
		stub := &unstructured.Unstructured{Object: map[string]any{}}
		stub.SetGroupVersionKind(gvk)
		if tv, err := tc.ObjectToTyped(stub); err == nil {
			k = &kindSchema{gvk: gvk, s: tv.Schema(), root: tv.TypeRef(), tc: tc}
			k.decl = newDeclTypes(k.s, "lint."+strings.ReplaceAll(gvk.Group, ".", "_")+"."+gvk.Version+"."+gvk.Kind)
		}
	}
	c.kinds[gvk] = k
	return k
}

// target is one kind a policy can match, with its schema.
type target struct {
	gvk    schema.GroupVersionKind
	schema *kindSchema
}

func (t target) label() string {
	if t.gvk.Group == "" {
		return t.gvk.Version + " " + t.gvk.Kind
	}
	return t.gvk.Group + "/" + t.gvk.Version + " " + t.gvk.Kind
}

// targets returns the kinds p's matchConstraints select, with a schema,
// sorted: the resources its rules name, each subresource with the kind
// kube-apiserver registers for it. Like kube-apiserver's type checking, a
// rule with a wildcard in its groups, versions or resources names no kind
// to check (the policy then applies to kinds its author may never have
// thought of, and checking all of them would mostly say so), and at most
// maxKinds kinds are checked.
func (c *Checker) targets(p *admissionregistrationv1.MutatingAdmissionPolicy) []target {
	mc := p.Spec.MatchConstraints
	if mc == nil {
		return nil
	}
	seen := map[schema.GroupVersionKind]bool{}
	var out []target
	for _, r := range mc.ResourceRules {
		if hasWildcard(r.APIGroups) || hasWildcard(r.APIVersions) || hasWildcard(r.Resources) {
			continue
		}
		for _, g := range r.APIGroups {
			for _, v := range r.APIVersions {
				for _, res := range r.Resources {
					plural, sub, _ := strings.Cut(res, "/")
					gvk := c.table.KindFor(schema.GroupVersionResource{Group: g, Version: v, Resource: plural}, sub)
					if gvk.Empty() || seen[gvk] {
						continue
					}
					seen[gvk] = true
					if ks := c.schemaOf(gvk); ks != nil {
						out = append(out, target{gvk: gvk, schema: ks})
					}
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].gvk.String() < out[j].gvk.String() })
	if len(out) > maxKinds {
		out = out[:maxKinds]
	}
	return out
}

func hasWildcard(l []string) bool {
	for _, s := range l {
		if strings.Contains(s, "*") {
			return true
		}
	}
	return false
}

// paramSchema returns the schema of p's paramKind, or nil.
func (c *Checker) paramSchema(p *admissionregistrationv1.MutatingAdmissionPolicy) *kindSchema {
	pk := p.Spec.ParamKind
	if pk == nil {
		return nil
	}
	gv, err := schema.ParseGroupVersion(pk.APIVersion)
	if err != nil {
		return nil
	}
	return c.schemaOf(gv.WithKind(pk.Kind))
}

// resolve returns the atom of tr in s.
func resolve(s *smdschema.Schema, tr smdschema.TypeRef) (smdschema.Atom, bool) {
	return s.Resolve(tr)
}

// describe names the shape of a schema type for messages.
func describe(a smdschema.Atom) string {
	switch {
	case a.Scalar != nil:
		return string(*a.Scalar)
	case a.List != nil:
		return "list"
	case a.Map != nil && len(a.Map.Fields) > 0:
		return "object"
	case a.Map != nil:
		return "map"
	}
	return fmt.Sprint("untyped")
}
