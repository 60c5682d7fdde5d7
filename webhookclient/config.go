package webhookclient

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	admissionregistrationv1beta1 "k8s.io/api/admissionregistration/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mutatis-dev/mutatis/manifest"
	"github.com/mutatis-dev/mutatis/scheme/webhookconfig"
)

// KindMutatingWebhookConfiguration is the kind this package loads.
const KindMutatingWebhookConfiguration = "MutatingWebhookConfiguration"

// Configuration is a MutatingWebhookConfiguration read from a manifest,
// defaulted, converted to admissionregistration.k8s.io/v1 and validated as
// kube-apiserver does on create.
type Configuration struct {
	Source manifest.Source
	// APIVersion is the apiVersion the manifest was written in.
	APIVersion string
	// Configuration is the configuration as kube-apiserver stores it.
	Configuration *admissionregistrationv1.MutatingWebhookConfiguration
	// Warnings are kube-apiserver's warnings on create.
	Warnings []string
}

// IsConfiguration reports whether obj is a MutatingWebhookConfiguration
// (of any version of admissionregistration.k8s.io), which Load takes out
// of a Set.
func IsConfiguration(obj manifest.Object) bool {
	if obj.Object == nil {
		return false
	}
	gvk := obj.Object.GroupVersionKind()
	return gvk.Group == admissionregistrationv1.GroupName && gvk.Kind == KindMutatingWebhookConfiguration
}

// Load reads the MutatingWebhookConfigurations among the objects of set
// (what manifest.Load returns for kinds it does not know): strictly
// decoded from admissionregistration.k8s.io v1 or v1beta1, defaulted with
// the defaults of that version, converted to v1 and validated with
// kube-apiserver's create validation (scheme/webhookconfig). The
// configurations come back sorted by name, the order in which
// kube-apiserver calls them. Configurations that fail are left out; the
// error is a manifest.ErrorList naming the file, the document and every
// field path, as manifest reports a policy's. A name used twice keeps the
// first configuration, as the API server would refuse the second.
func Load(set *manifest.Set) ([]Configuration, error) {
	var out []Configuration
	var errs manifest.ErrorList
	seen := map[string]manifest.Source{}
	for _, obj := range set.Objects {
		if !IsConfiguration(obj) {
			continue
		}
		c, err := decode(obj)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		name := c.Configuration.Name
		if first, dup := seen[name]; dup {
			errs = append(errs, &manifest.Error{Source: obj.Source, Kind: KindMutatingWebhookConfiguration, Name: name,
				Err: fmt.Errorf("%s %q already exists (first defined at %s)", KindMutatingWebhookConfiguration, name, first)})
			continue
		}
		seen[name] = obj.Source
		out = append(out, *c)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Configuration.Name < out[j].Configuration.Name })
	if len(errs) > 0 {
		return out, errs
	}
	return out, nil
}

// LoadOnly is Load for a set that must hold nothing but
// MutatingWebhookConfigurations (a file of webhooks given as such):
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
	var in runtime.Object
	switch gvk.Version {
	case "v1":
		in = &admissionregistrationv1.MutatingWebhookConfiguration{}
	case "v1beta1":
		in = &admissionregistrationv1beta1.MutatingWebhookConfiguration{}
	default:
		return nil, fail(fmt.Errorf("no kind %q is registered for version %q", gvk.Kind, schema.GroupVersion{Group: gvk.Group, Version: gvk.Version}))
	}
	if err := manifest.DecodeStrict(js, in); err != nil {
		return nil, fail(err)
	}
	res, err := webhookconfig.Mutating(in)
	if err != nil {
		return nil, fail(err)
	}
	if len(res.Invalid) > 0 {
		return nil, &manifest.Error{Source: obj.Source, Kind: gvk.Kind, Name: u.GetName(), Errs: res.Invalid}
	}
	if res.Configuration == nil {
		return nil, fail(errors.New("no configuration"))
	}
	return &Configuration{Source: obj.Source, APIVersion: gvk.GroupVersion().String(), Configuration: res.Configuration, Warnings: res.Warnings}, nil
}

// APIObjects returns the configurations as API objects, in order: what
// NewDispatcher takes.
func APIObjects(configs []Configuration) []*admissionregistrationv1.MutatingWebhookConfiguration {
	out := make([]*admissionregistrationv1.MutatingWebhookConfiguration, len(configs))
	for i, c := range configs {
		out[i] = c.Configuration
	}
	return out
}
