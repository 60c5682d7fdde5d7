// Package webhookconfig is kube-apiserver's create path for a
// MutatingWebhookConfiguration or a ValidatingWebhookConfiguration: the
// defaults of the version it is written in (admissionregistration.k8s.io
// v1 or v1beta1, each with its own), the conversion through the internal
// version to v1, and the registry strategy's API validation
// (k8s.io/kubernetes pkg/apis/admissionregistration/validation through
// pkg/registry/admissionregistration/mutatingwebhookconfiguration or
// validatingwebhookconfiguration, with declarative validation and the
// metadata checks of rest.ValidateCreate).
//
// It is part of scheme, the one place of mutatis that imports
// k8s.io/kubernetes, in a package of its own because the validation
// package pulls in the CEL compilers of kube-apiserver's admission plugins
// (matchConditions are compiled in the webhook environment at create
// time): only the programs that load webhook configurations pay for them.
package webhookconfig

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	admissionregistrationv1beta1 "k8s.io/api/admissionregistration/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/kubernetes/pkg/apis/admissionregistration"
	"k8s.io/kubernetes/pkg/registry/admissionregistration/mutatingwebhookconfiguration"
	"k8s.io/kubernetes/pkg/registry/admissionregistration/validatingwebhookconfiguration"

	"github.com/mutatis-dev/mutatis/scheme"
)

// Result is a MutatingWebhookConfiguration as kube-apiserver would store
// it, or the reasons it would refuse it.
type Result struct {
	// Configuration is the defaulted configuration in
	// admissionregistration.k8s.io/v1; nil when Invalid is not empty.
	Configuration *admissionregistrationv1.MutatingWebhookConfiguration
	// Invalid are the field errors of API validation (kube-apiserver's
	// 422), with their field paths.
	Invalid field.ErrorList
	// Warnings are the strategy's warnings on create.
	Warnings []string
}

// Mutating defaults, converts and validates in, a
// *admissionregistrationv1.MutatingWebhookConfiguration or a
// *admissionregistrationv1beta1.MutatingWebhookConfiguration as decoded
// from a manifest, as kube-apiserver does on create. in is not modified.
// An error is one of the simulation (an unexpected type), not a refusal.
func Mutating(in runtime.Object) (*Result, error) {
	switch in.(type) {
	case *admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1beta1.MutatingWebhookConfiguration:
	default:
		return nil, fmt.Errorf("not a MutatingWebhookConfiguration: %T", in)
	}
	out := &admissionregistrationv1.MutatingWebhookConfiguration{}
	invalid, warnings, err := create(in, &admissionregistration.MutatingWebhookConfiguration{}, out, "mutatingwebhookconfigurations", mutatingwebhookconfiguration.Strategy)
	if err != nil {
		return nil, err
	}
	if len(invalid) > 0 {
		return &Result{Invalid: invalid}, nil
	}
	out.SetGroupVersionKind(admissionregistrationv1.SchemeGroupVersion.WithKind("MutatingWebhookConfiguration"))
	return &Result{Configuration: out, Warnings: warnings}, nil
}

// ValidatingResult is a ValidatingWebhookConfiguration as kube-apiserver
// would store it, or the reasons it would refuse it (Result's fields).
type ValidatingResult struct {
	// Configuration is the defaulted configuration in
	// admissionregistration.k8s.io/v1; nil when Invalid is not empty.
	Configuration *admissionregistrationv1.ValidatingWebhookConfiguration
	Invalid       field.ErrorList
	Warnings      []string
}

// Validating is Mutating for a ValidatingWebhookConfiguration (v1 or
// v1beta1 as decoded from a manifest), through the
// validatingwebhookconfiguration registry strategy.
func Validating(in runtime.Object) (*ValidatingResult, error) {
	switch in.(type) {
	case *admissionregistrationv1.ValidatingWebhookConfiguration, *admissionregistrationv1beta1.ValidatingWebhookConfiguration:
	default:
		return nil, fmt.Errorf("not a ValidatingWebhookConfiguration: %T", in)
	}
	out := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	invalid, warnings, err := create(in, &admissionregistration.ValidatingWebhookConfiguration{}, out, "validatingwebhookconfigurations", validatingwebhookconfiguration.Strategy)
	if err != nil {
		return nil, err
	}
	if len(invalid) > 0 {
		return &ValidatingResult{Invalid: invalid}, nil
	}
	out.SetGroupVersionKind(admissionregistrationv1.SchemeGroupVersion.WithKind("ValidatingWebhookConfiguration"))
	return &ValidatingResult{Configuration: out, Warnings: warnings}, nil
}

// strategy is what create needs of a registry strategy.
type strategy interface {
	rest.RESTCreateStrategy
	Canonicalize(obj runtime.Object)
}

// create is the create path of in into internal (its internal type) and
// out (its v1 type): the version's defaults, the conversion, the
// strategy's PrepareForCreate, validation, warnings and
// canonicalization, then the conversion to v1. invalid are the field
// errors of a refusal (out is then left empty).
func create(in runtime.Object, internal interface {
	runtime.Object
	GetName() string
}, out runtime.Object, resource string, st strategy) (invalid field.ErrorList, warnings []string, err error) {
	k, err := scheme.Kube()
	if err != nil {
		return nil, nil, err
	}
	versioned := in.DeepCopyObject()
	// The defaulters of the version the object was written in, as the
	// API server's decoder applies them.
	k.Default(versioned)
	if err := k.Convert(versioned, internal, nil); err != nil {
		return nil, nil, err
	}
	ctx := genericapirequest.WithNamespace(context.Background(), "")
	ctx = genericapirequest.WithRequestInfo(ctx, &genericapirequest.RequestInfo{
		IsResourceRequest: true, Verb: "create", APIPrefix: "apis",
		APIGroup: admissionregistrationv1.GroupName, APIVersion: "v1",
		Resource: resource, Name: internal.GetName(),
	})
	st.PrepareForCreate(ctx, internal)
	if errs := rest.ValidateCreate(ctx, internal, st); len(errs) > 0 {
		return errs, nil, nil
	}
	warnings = st.WarningsOnCreate(ctx, internal)
	st.Canonicalize(internal)
	if err := k.Convert(internal, out, nil); err != nil {
		return nil, nil, err
	}
	return nil, warnings, nil
}
