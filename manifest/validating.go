package manifest

import (
	v1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/api/admissionregistration/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/mutatis-dev/mutatis/scheme/policyconfig"
)

// addValidating reads a ValidatingAdmissionPolicy or binding (kind) of
// admissionregistration.k8s.io/version from js, strictly, and adds it to
// set as kube-apiserver would store it: the defaults of its version, the
// conversion to v1 and the registry's validation, all kube-apiserver's own
// (scheme/policyconfig; the validation compiles and type-checks every
// expression). A refused one is an error naming each field.
func addValidating(set *Set, src Source, js []byte, version, apiVersion, kind, name string) ErrorList {
	fail := func(err error) ErrorList {
		return ErrorList{{Source: src, Kind: kind, Name: name, Err: err}}
	}
	var in runtime.Object
	switch {
	case kind == kindValidatingPolicy && version == "v1":
		in = &v1.ValidatingAdmissionPolicy{}
	case kind == kindValidatingPolicy && version == "v1beta1":
		in = &v1beta1.ValidatingAdmissionPolicy{}
	case kind == kindValidatingBinding && version == "v1":
		in = &v1.ValidatingAdmissionPolicyBinding{}
	case kind == kindValidatingBinding && version == "v1beta1":
		in = &v1beta1.ValidatingAdmissionPolicyBinding{}
	default:
		return fail(notRegistered(kind, apiVersion))
	}
	if err := decodeStrict(js, in); err != nil {
		return fail(err)
	}
	if kind == kindValidatingPolicy {
		res, err := policyconfig.ValidatingPolicy(in)
		if err != nil {
			return fail(err)
		}
		if len(res.Invalid) > 0 {
			return ErrorList{{Source: src, Kind: kind, Name: name, Errs: res.Invalid}}
		}
		set.ValidatingPolicies = append(set.ValidatingPolicies, ValidatingPolicy{Source: src, APIVersion: apiVersion, Policy: res.Policy})
		return nil
	}
	res, err := policyconfig.ValidatingBinding(in)
	if err != nil {
		return fail(err)
	}
	if len(res.Invalid) > 0 {
		return ErrorList{{Source: src, Kind: kind, Name: name, Errs: res.Invalid}}
	}
	set.ValidatingBindings = append(set.ValidatingBindings, ValidatingBinding{Source: src, APIVersion: apiVersion, Binding: res.Binding})
	return nil
}

// ValidatingAPIObjects returns the set's ValidatingAdmissionPolicies and
// bindings as API objects, in load order: what validating.Evaluator takes.
func (s *Set) ValidatingAPIObjects() ([]*v1.ValidatingAdmissionPolicy, []*v1.ValidatingAdmissionPolicyBinding) {
	return pluck(s.ValidatingPolicies, func(p ValidatingPolicy) *v1.ValidatingAdmissionPolicy { return p.Policy }),
		pluck(s.ValidatingBindings, func(b ValidatingBinding) *v1.ValidatingAdmissionPolicyBinding { return b.Binding })
}

// pluck is get of every item of list.
func pluck[T, U any](list []T, get func(T) U) []U {
	out := make([]U, len(list))
	for i, it := range list {
		out[i] = get(it)
	}
	return out
}
