package costs

import (
	"sort"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiservercel "k8s.io/apiserver/pkg/cel"

	"github.com/mutatis-dev/mutatis/applyconfig"
	"github.com/mutatis-dev/mutatis/manifest"
)

// CRDIndex holds the CustomResourceDefinitions found among loaded objects:
// their schemas, the kind each served resource version has, and the CRD
// object serving each kind.
type CRDIndex struct {
	schemas *applyconfig.Schemas
	kinds   map[schema.GroupVersionResource]schema.GroupVersionKind
	objects map[schema.GroupVersionKind]*unstructured.Unstructured
}

// IndexCRDs registers every CustomResourceDefinition among objects; CRDs
// that cannot be registered are returned as problems.
func IndexCRDs(objects []manifest.Object) (*CRDIndex, manifest.ErrorList) {
	ix := &CRDIndex{
		schemas: applyconfig.NewSchemas(),
		kinds:   map[schema.GroupVersionResource]schema.GroupVersionKind{},
		objects: map[schema.GroupVersionKind]*unstructured.Unstructured{},
	}
	var problems manifest.ErrorList
	for _, o := range objects {
		if o.Object.GetKind() != "CustomResourceDefinition" {
			continue
		}
		if err := ix.schemas.AddCRD(o.Object); err != nil {
			problems = append(problems, &manifest.Error{Source: o.Source, Kind: o.Object.GetKind(), Name: o.Object.GetName(), Err: err})
			continue
		}
		group, _, _ := unstructured.NestedString(o.Object.Object, "spec", "group")
		plural, _, _ := unstructured.NestedString(o.Object.Object, "spec", "names", "plural")
		kind, _, _ := unstructured.NestedString(o.Object.Object, "spec", "names", "kind")
		versions, _, _ := unstructured.NestedSlice(o.Object.Object, "spec", "versions")
		for _, v := range versions {
			if vm, ok := v.(map[string]any); ok {
				name, _ := vm["name"].(string)
				gvk := schema.GroupVersionKind{Group: group, Version: name, Kind: kind}
				ix.kinds[schema.GroupVersionResource{Group: group, Version: name, Resource: plural}] = gvk
				ix.objects[gvk] = o.Object
			}
		}
	}
	return ix, problems
}

// resources returns the served resources, sorted for a stable report.
func (ix *CRDIndex) resources() []schema.GroupVersionResource {
	out := make([]schema.GroupVersionResource, 0, len(ix.kinds))
	for gvr := range ix.kinds {
		out = append(out, gvr)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// policyTargets lists the kinds p's matchConstraints can select: each
// loaded CRD kind its resource rules name (wildcards included), and one
// schema-less target for everything else (built-in kinds, CRDs not loaded).
func policyTargets(p *admissionregistrationv1.MutatingAdmissionPolicy, crds *CRDIndex) []*costTarget {
	var out []*costTarget
	seen := map[schema.GroupVersionKind]bool{}
	var others []string
	otherSeen := map[string]bool{}
	if mc := p.Spec.MatchConstraints; mc != nil {
		for _, r := range mc.ResourceRules {
			for _, g := range r.APIGroups {
				for _, v := range r.APIVersions {
					for _, res := range r.Resources {
						plural := strings.Split(res, "/")[0]
						matched := false
						for _, gvr := range crds.resources() {
							if (g == "*" || g == gvr.Group) && (v == "*" || v == gvr.Version) && (plural == "*" || plural == gvr.Resource) {
								matched = true
								gvk := crds.kinds[gvr]
								if seen[gvk] {
									continue
								}
								seen[gvk] = true
								t := &costTarget{label: gvk.Kind + " " + gvk.GroupVersion().String(), crd: crds.objects[gvk], gvk: gvk}
								if dt, err := crds.schemas.DeclType(gvk); err == nil {
									t.decl = dt
								}
								out = append(out, t)
							}
						}
						if !matched || g == "*" || v == "*" || plural == "*" {
							label := res
							if g != "" {
								label += "." + g
							}
							if !otherSeen[label] {
								otherSeen[label] = true
								others = append(others, label)
							}
						}
					}
				}
			}
		}
	}
	if len(others) > 0 || len(out) == 0 {
		label := strings.Join(others, ", ")
		if label == "" {
			label = "any"
		}
		out = append(out, &costTarget{label: label + " (no schema)"})
	}
	return out
}

// TargetDeclType returns the schema type of the kind p targets when it
// targets exactly one custom resource kind whose CRD ix holds; nil
// otherwise (no single schema bounds the estimate).
func (ix *CRDIndex) TargetDeclType(p *admissionregistrationv1.MutatingAdmissionPolicy) *apiservercel.DeclType {
	if p.Spec.MatchConstraints == nil {
		return nil
	}
	var found *apiservercel.DeclType
	for _, r := range p.Spec.MatchConstraints.ResourceRules {
		for _, g := range r.APIGroups {
			for _, v := range r.APIVersions {
				for _, res := range r.Resources {
					gvk, ok := ix.kinds[schema.GroupVersionResource{Group: g, Version: v, Resource: strings.Split(res, "/")[0]}]
					if !ok {
						continue
					}
					dt, err := ix.schemas.DeclType(gvk)
					if err != nil {
						continue
					}
					if found != nil && found != dt {
						return nil // several kinds: no single schema bounds the estimate
					}
					found = dt
				}
			}
		}
	}
	return found
}
