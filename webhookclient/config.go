package webhookclient

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	admissionregistrationv1beta1 "k8s.io/api/admissionregistration/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/mutatis-dev/mutatis/manifest"
	"github.com/mutatis-dev/mutatis/scheme/webhookconfig"
)

// The kinds this package loads.
const (
	KindMutatingWebhookConfiguration   = "MutatingWebhookConfiguration"
	KindValidatingWebhookConfiguration = "ValidatingWebhookConfiguration"
)

// Configuration is a MutatingWebhookConfiguration or a
// ValidatingWebhookConfiguration read from a manifest, defaulted,
// converted to admissionregistration.k8s.io/v1 and validated as
// kube-apiserver does on create. Exactly one of Configuration and
// Validating is set.
type Configuration struct {
	Source manifest.Source
	// APIVersion is the apiVersion the manifest was written in.
	APIVersion string
	// Configuration is the mutating configuration as kube-apiserver
	// stores it (nil for a validating one).
	Configuration *admissionregistrationv1.MutatingWebhookConfiguration
	// Validating is the validating configuration as kube-apiserver
	// stores it (nil for a mutating one).
	Validating *admissionregistrationv1.ValidatingWebhookConfiguration
	// Warnings are kube-apiserver's warnings on create.
	Warnings []string
}

// Kind is the configuration's kind.
func (c Configuration) Kind() string {
	if c.Validating != nil {
		return KindValidatingWebhookConfiguration
	}
	return KindMutatingWebhookConfiguration
}

// Name is the configuration's name.
func (c Configuration) Name() string {
	if c.Validating != nil {
		return c.Validating.Name
	}
	if c.Configuration != nil {
		return c.Configuration.Name
	}
	return ""
}

// WebhookIndex is the index of the webhook named name in the
// configuration's list, or -1.
func (c Configuration) WebhookIndex(name string) int {
	if c.Validating != nil {
		return slices.IndexFunc(c.Validating.Webhooks, func(w admissionregistrationv1.ValidatingWebhook) bool { return w.Name == name })
	}
	if c.Configuration != nil {
		return slices.IndexFunc(c.Configuration.Webhooks, func(w admissionregistrationv1.MutatingWebhook) bool { return w.Name == name })
	}
	return -1
}

// IsConfiguration reports whether obj is a MutatingWebhookConfiguration
// or a ValidatingWebhookConfiguration (of any version of
// admissionregistration.k8s.io), which Load takes out of a Set.
func IsConfiguration(obj manifest.Object) bool {
	if obj.Object == nil {
		return false
	}
	gvk := obj.Object.GroupVersionKind()
	return gvk.Group == admissionregistrationv1.GroupName && (gvk.Kind == KindMutatingWebhookConfiguration || gvk.Kind == KindValidatingWebhookConfiguration)
}

// Load reads the MutatingWebhookConfigurations and
// ValidatingWebhookConfigurations among the objects of set (what
// manifest.Load returns for kinds it does not know): strictly
// decoded from admissionregistration.k8s.io v1 or v1beta1, defaulted with
// the defaults of that version, converted to v1 and validated with
// kube-apiserver's create validation (scheme/webhookconfig). The
// configurations come back sorted by name, the order in which
// kube-apiserver calls them. Configurations that fail are left out; the
// error is a manifest.ErrorList naming the file, the document and every
// field path, as manifest reports a policy's. A name used twice in one kind
// keeps the first configuration, as the API server would refuse the
// second.
func Load(set *manifest.Set) ([]Configuration, error) {
	var out []Configuration
	var errs manifest.ErrorList
	seen := map[[2]string]manifest.Source{}
	for _, obj := range set.Objects {
		if !IsConfiguration(obj) {
			continue
		}
		c, err := decode(obj)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		key := [2]string{c.Kind(), c.Name()}
		if first, dup := seen[key]; dup {
			errs = append(errs, &manifest.Error{Source: obj.Source, Kind: key[0], Name: key[1],
				Err: fmt.Errorf("%s %q already exists (first defined at %s)", key[0], key[1], first)})
			continue
		}
		seen[key] = obj.Source
		out = append(out, *c)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	if len(errs) > 0 {
		return out, errs
	}
	return out, nil
}

// LoadOnly is Load for a set that must hold nothing but webhook
// configurations (a file of webhooks given as such):
// policies, bindings and other objects in it are errors naming them.
func LoadOnly(set *manifest.Set) ([]Configuration, error) {
	var errs manifest.ErrorList
	for _, p := range set.Policies {
		errs = append(errs, &manifest.Error{Source: p.Source, Kind: "MutatingAdmissionPolicy", Name: p.Policy.Name, Err: errors.New("a MutatingAdmissionPolicy among the webhook configurations (policies go with the policies)")})
	}
	for _, b := range set.Bindings {
		errs = append(errs, &manifest.Error{Source: b.Source, Kind: "MutatingAdmissionPolicyBinding", Name: b.Binding.Name, Err: errors.New("a MutatingAdmissionPolicyBinding among the webhook configurations (bindings go with the policies)")})
	}
	for _, obj := range set.Objects {
		if !IsConfiguration(obj) {
			errs = append(errs, &manifest.Error{Source: obj.Source, Kind: obj.Object.GetKind(), Name: obj.Object.GetName(), Err: fmt.Errorf("a %s among the webhook configurations (other objects go with the resources)", obj.Object.GetKind())})
		}
	}
	configs, err := Load(set)
	if err != nil {
		var list manifest.ErrorList
		if !errors.As(err, &list) {
			return nil, err
		}
		errs = append(errs, list...)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return configs, nil
}

func decode(obj manifest.Object) (*Configuration, *manifest.Error) {
	u := obj.Object
	gvk := u.GroupVersionKind()
	fail := func(err error) *manifest.Error {
		return &manifest.Error{Source: obj.Source, Kind: gvk.Kind, Name: u.GetName(), Err: err}
	}
	js, err := json.Marshal(u.Object)
	if err != nil {
		return nil, fail(err)
	}
	validating := gvk.Kind == KindValidatingWebhookConfiguration
	var in runtime.Object
	switch {
	case gvk.Version == "v1" && validating:
		in = &admissionregistrationv1.ValidatingWebhookConfiguration{}
	case gvk.Version == "v1":
		in = &admissionregistrationv1.MutatingWebhookConfiguration{}
	case gvk.Version == "v1beta1" && validating:
		in = &admissionregistrationv1beta1.ValidatingWebhookConfiguration{}
	case gvk.Version == "v1beta1":
		in = &admissionregistrationv1beta1.MutatingWebhookConfiguration{}
	default:
		return nil, fail(fmt.Errorf("no kind %q is registered for version %q", gvk.Kind, schema.GroupVersion{Group: gvk.Group, Version: gvk.Version}))
	}
	if err := manifest.DecodeStrict(js, in); err != nil {
		return nil, fail(err)
	}
	c := &Configuration{Source: obj.Source, APIVersion: gvk.GroupVersion().String()}
	var invalid field.ErrorList
	if validating {
		res, err := webhookconfig.Validating(in)
		if err != nil {
			return nil, fail(err)
		}
		invalid, c.Validating, c.Warnings = res.Invalid, res.Configuration, res.Warnings
	} else {
		res, err := webhookconfig.Mutating(in)
		if err != nil {
			return nil, fail(err)
		}
		invalid, c.Configuration, c.Warnings = res.Invalid, res.Configuration, res.Warnings
	}
	if len(invalid) > 0 {
		return nil, &manifest.Error{Source: obj.Source, Kind: gvk.Kind, Name: u.GetName(), Errs: invalid}
	}
	if c.Configuration == nil && c.Validating == nil {
		return nil, fail(errors.New("no configuration"))
	}
	return c, nil
}

// APIObjects returns the mutating configurations as API objects, in
// order: what NewDispatcher takes.
func APIObjects(configs []Configuration) []*admissionregistrationv1.MutatingWebhookConfiguration {
	var out []*admissionregistrationv1.MutatingWebhookConfiguration
	for _, c := range configs {
		if c.Configuration != nil {
			out = append(out, c.Configuration)
		}
	}
	return out
}

// ValidatingAPIObjects returns the validating configurations as API
// objects, in order: what NewValidatingDispatcher takes.
func ValidatingAPIObjects(configs []Configuration) []*admissionregistrationv1.ValidatingWebhookConfiguration {
	var out []*admissionregistrationv1.ValidatingWebhookConfiguration
	for _, c := range configs {
		if c.Validating != nil {
			out = append(out, c.Validating)
		}
	}
	return out
}
