// Package policyconfig is kube-apiserver's create path for a
// ValidatingAdmissionPolicy and a ValidatingAdmissionPolicyBinding: the
// defaults of the version they are written in (admissionregistration.k8s.io
// v1 or v1beta1), the conversion through the internal version to v1, the
// registry strategy's PrepareForCreate (generation 1, no status) and its
// API validation (k8s.io/kubernetes pkg/apis/admissionregistration/validation
// ValidateValidatingAdmissionPolicy and ValidateValidatingAdmissionPolicyBinding
// through pkg/registry/admissionregistration/validatingadmissionpolicy and
// …binding, with declarative validation and the metadata checks of
// rest.ValidateCreate). The validation compiles every expression in
// kube-apiserver's CEL environment and type-checks it (an auditAnnotation's
// valueExpression must be statically a string, a validation's expression a
// bool …).
//
// The strategies' paramKind and paramRef authorization checks are those of
// a user allowed everything (the manifests are the cluster's own): no
// authorizer, as kube-apiserver skips them without one.
//
// It is part of scheme, the one place of mutatis that imports
// k8s.io/kubernetes, in a package of its own like scheme/webhookconfig.
package policyconfig

import (
	"context"
	"errors"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	admissionregistrationv1beta1 "k8s.io/api/admissionregistration/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/kubernetes/pkg/apis/admissionregistration"
	"k8s.io/kubernetes/pkg/registry/admissionregistration/resolver"
	"k8s.io/kubernetes/pkg/registry/admissionregistration/validatingadmissionpolicy"
	"k8s.io/kubernetes/pkg/registry/admissionregistration/validatingadmissionpolicybinding"

	"github.com/mutatis-dev/mutatis/scheme"
)

// Policy is a ValidatingAdmissionPolicy as kube-apiserver would store it,
// or the reasons it would refuse it.
type Policy struct {
	// Policy is the defaulted policy in admissionregistration.k8s.io/v1;
	// nil when Invalid is not empty.
	Policy *admissionregistrationv1.ValidatingAdmissionPolicy
	// Invalid are the field errors of API validation (kube-apiserver's
	// 422), with their field paths.
	Invalid field.ErrorList
	// Warnings are the strategy's warnings on create.
	Warnings []string
}

// Binding is a ValidatingAdmissionPolicyBinding as kube-apiserver would
// store it, or the reasons it would refuse it.
type Binding struct {
	// Binding is the defaulted binding in admissionregistration.k8s.io/v1;
	// nil when Invalid is not empty.
	Binding *admissionregistrationv1.ValidatingAdmissionPolicyBinding
	// Invalid are the field errors of API validation.
	Invalid field.ErrorList
	// Warnings are the strategy's warnings on create.
	Warnings []string
}

// ValidatingPolicy defaults, converts and validates in, a
// *admissionregistrationv1.ValidatingAdmissionPolicy or a
// *admissionregistrationv1beta1.ValidatingAdmissionPolicy as decoded from
// a manifest, as kube-apiserver does on create. in is not modified. An
// error is one of the simulation (an unexpected type), not a refusal.
func ValidatingPolicy(in runtime.Object) (*Policy, error) {
	switch in.(type) {
	case *admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1beta1.ValidatingAdmissionPolicy:
	default:
		return nil, fmt.Errorf("not a ValidatingAdmissionPolicy: %T", in)
	}
	internal := &admissionregistration.ValidatingAdmissionPolicy{}
	if err := toInternal(in, internal); err != nil {
		return nil, err
	}
	st := validatingadmissionpolicy.NewStrategy(nil, noResolver)
	invalid, warnings := create(st, internal, "validatingadmissionpolicies", internal.Name)
	if len(invalid) > 0 {
		return &Policy{Invalid: invalid}, nil
	}
	out := &admissionregistrationv1.ValidatingAdmissionPolicy{}
	if err := toV1(internal, out, "ValidatingAdmissionPolicy"); err != nil {
		return nil, err
	}
	return &Policy{Policy: out, Warnings: warnings}, nil
}

// ValidatingBinding is ValidatingPolicy for a
// ValidatingAdmissionPolicyBinding (v1 or v1beta1).
func ValidatingBinding(in runtime.Object) (*Binding, error) {
	switch in.(type) {
	case *admissionregistrationv1.ValidatingAdmissionPolicyBinding, *admissionregistrationv1beta1.ValidatingAdmissionPolicyBinding:
	default:
		return nil, fmt.Errorf("not a ValidatingAdmissionPolicyBinding: %T", in)
	}
	internal := &admissionregistration.ValidatingAdmissionPolicyBinding{}
	if err := toInternal(in, internal); err != nil {
		return nil, err
	}
	st := validatingadmissionpolicybinding.NewStrategy(nil, nil, noResolver)
	invalid, warnings := create(st, internal, "validatingadmissionpolicybindings", internal.Name)
	if len(invalid) > 0 {
		return &Binding{Invalid: invalid}, nil
	}
	out := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	if err := toV1(internal, out, "ValidatingAdmissionPolicyBinding"); err != nil {
		return nil, err
	}
	return &Binding{Binding: out, Warnings: warnings}, nil
}

// noResolver is the strategies' resource resolver: never asked, since
// without an authorizer they authorize nothing (the binding's strategy
// refuses a nil one all the same).
var noResolver = resolver.ResourceResolverFunc(func(gvk schema.GroupVersionKind) (schema.GroupVersionResource, error) {
	return schema.GroupVersionResource{}, errors.New("no resource resolver offline")
})

// toInternal applies the defaulters of in's version, as the API server's
// decoder does, and converts a copy of in into internal.
func toInternal(in, internal runtime.Object) error {
	k, err := scheme.Kube()
	if err != nil {
		return err
	}
	versioned := in.DeepCopyObject()
	k.Default(versioned)
	return k.Convert(versioned, internal, nil)
}

// toV1 converts internal into out and sets out's kind.
func toV1(internal, out runtime.Object, kind string) error {
	k, err := scheme.Kube()
	if err != nil {
		return err
	}
	if err := k.Convert(internal, out, nil); err != nil {
		return err
	}
	out.GetObjectKind().SetGroupVersionKind(admissionregistrationv1.SchemeGroupVersion.WithKind(kind))
	return nil
}

// create runs st's create path on internal, in place: PrepareForCreate,
// the validation rest.ValidateCreate runs, the warnings, Canonicalize.
func create(st rest.RESTCreateStrategy, internal runtime.Object, resource, name string) (field.ErrorList, []string) {
	ctx := genericapirequest.WithNamespace(context.Background(), "")
	ctx = genericapirequest.WithRequestInfo(ctx, &genericapirequest.RequestInfo{
		IsResourceRequest: true, Verb: "create", APIPrefix: "apis",
		APIGroup: admissionregistrationv1.GroupName, APIVersion: "v1",
		Resource: resource, Name: name,
	})
	st.PrepareForCreate(ctx, internal)
	if errs := rest.ValidateCreate(ctx, internal, st); len(errs) > 0 {
		return errs, nil
	}
	warnings := st.WarningsOnCreate(ctx, internal)
	st.Canonicalize(internal)
	return nil, warnings
}
