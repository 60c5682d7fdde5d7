// Package migrate is the check a team runs before switching a mutating
// webhook off for the MutatingAdmissionPolicies that replace it: every
// object goes through two admission chains of a simulated kube-apiserver,
// the one with the webhooks (what the cluster runs today) and the one
// where the policies replace some or all of them, and the results kube-
// apiserver would store (or its refusals) are compared object by object.
//
// The package owns the comparison and its report; the chains themselves
// are the simulated cluster's (cluster.Cluster), given to Check as two
// Sides.
package migrate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/mutatis-dev/mutatis/explain"
	"github.com/mutatis-dev/mutatis/manifest"
)

// Replacement says that a policy replaces a webhook: `--replaces
// POLICY=WEBHOOK`. Webhook is a webhook's name, or CONFIGURATION/NAME to
// pick it in one configuration.
type Replacement struct {
	Policy, Webhook string
}

// String is the flag's form.
func (r Replacement) String() string { return r.Policy + "=" + r.Webhook }

// ParseReplacements reads `POLICY=WEBHOOK` mappings.
func ParseReplacements(in []string) ([]Replacement, error) {
	out := make([]Replacement, 0, len(in))
	for _, s := range in {
		p, w, ok := strings.Cut(s, "=")
		if !ok || p == "" || w == "" {
			return nil, fmt.Errorf("--replaces %q: want POLICY=WEBHOOK (WEBHOOK: a webhook's name, or CONFIGURATION/NAME)", s)
		}
		out = append(out, Replacement{Policy: p, Webhook: w})
	}
	return out, nil
}

// Without returns the configurations with the webhooks the replacements
// name taken out (all of them when replacements is empty: the policies
// replace every webhook), configurations left with no webhook dropped.
// policies are the names of the policies that take over: a replacement
// naming a policy that is not among them, or a webhook that no
// configuration has, is an error, since a check of the wrong pair would
// pass for the wrong reason. The inputs are not modified.
func Without(configs []*admissionregistrationv1.MutatingWebhookConfiguration, replacements []Replacement, policies []string) ([]*admissionregistrationv1.MutatingWebhookConfiguration, error) {
	kept, _, err := WithoutAll(configs, nil, replacements, policies, nil)
	return kept, err
}

// WithoutAll is Without over both kinds of configuration: a replacement
// whose policy is a MutatingAdmissionPolicy (among mutatingPolicies) takes
// a webhook of the MutatingWebhookConfigurations out, one whose policy is
// a ValidatingAdmissionPolicy (validatingPolicies) a webhook of the
// ValidatingWebhookConfigurations; without replacements the policies
// replace every webhook of both.
func WithoutAll(mutating []*admissionregistrationv1.MutatingWebhookConfiguration, validating []*admissionregistrationv1.ValidatingWebhookConfiguration,
	replacements []Replacement, mutatingPolicies, validatingPolicies []string) ([]*admissionregistrationv1.MutatingWebhookConfiguration, []*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	if len(replacements) == 0 {
		return nil, nil, nil
	}
	mhooks := func(c *admissionregistrationv1.MutatingWebhookConfiguration) []string {
		return webhookNamesOf(c.Webhooks, func(w admissionregistrationv1.MutatingWebhook) string { return w.Name })
	}
	vhooks := func(c *admissionregistrationv1.ValidatingWebhookConfiguration) []string {
		return webhookNamesOf(c.Webhooks, func(w admissionregistrationv1.ValidatingWebhook) string { return w.Name })
	}
	mname := func(c *admissionregistrationv1.MutatingWebhookConfiguration) string { return c.Name }
	vname := func(c *admissionregistrationv1.ValidatingWebhookConfiguration) string { return c.Name }
	var errs []error
	mdrop, vdrop := map[string]bool{}, map[string]bool{}
	for _, r := range replacements {
		isM, isV := slices.Contains(mutatingPolicies, r.Policy), slices.Contains(validatingPolicies, r.Policy)
		switch {
		case !isM && !isV && len(validatingPolicies) == 0:
			errs = append(errs, fmt.Errorf("--replaces %s: no MutatingAdmissionPolicy %q in --policies (have: %s)", r, r.Policy, strings.Join(mutatingPolicies, ", ")))
		case !isM && !isV:
			errs = append(errs, fmt.Errorf("--replaces %s: no MutatingAdmissionPolicy or ValidatingAdmissionPolicy %q in --policies (have: %s)", r, r.Policy, strings.Join(append(slices.Clone(mutatingPolicies), validatingPolicies...), ", ")))
		}
		found := 0
		var have []string
		if isM || !isV {
			found += pick(mutating, mname, mhooks, r.Webhook, mdrop)
			have = append(have, allNames(mutating, mname, mhooks)...)
		}
		if isV {
			found += pick(validating, vname, vhooks, r.Webhook, vdrop)
			have = append(have, allNames(validating, vname, vhooks)...)
		}
		if found == 0 {
			if len(have) == 0 {
				have = []string{"none"}
			}
			errs = append(errs, fmt.Errorf("--replaces %s: no webhook %q in --webhooks (have: %s)", r, r.Webhook, strings.Join(have, ", ")))
		}
	}
	if len(errs) > 0 {
		return nil, nil, errors.Join(errs...)
	}
	mout := keep(mutating, (*admissionregistrationv1.MutatingWebhookConfiguration).DeepCopy, mname,
		func(c *admissionregistrationv1.MutatingWebhookConfiguration) *[]admissionregistrationv1.MutatingWebhook {
			return &c.Webhooks
		},
		func(w admissionregistrationv1.MutatingWebhook) string { return w.Name }, mdrop)
	vout := keep(validating, (*admissionregistrationv1.ValidatingWebhookConfiguration).DeepCopy, vname,
		func(c *admissionregistrationv1.ValidatingWebhookConfiguration) *[]admissionregistrationv1.ValidatingWebhook {
			return &c.Webhooks
		},
		func(w admissionregistrationv1.ValidatingWebhook) string { return w.Name }, vdrop)
	return mout, vout, nil
}

// pick marks in drop (CONFIGURATION/NAME) the webhooks of configs that
// webhook (a name, or CONFIGURATION/NAME) names, and counts them.
func pick[C any](configs []C, configName func(C) string, hooks func(C) []string, webhook string, drop map[string]bool) int {
	config, name, qualified := strings.Cut(webhook, "/")
	if !qualified {
		config, name = "", webhook
	}
	found := 0
	for _, c := range configs {
		if qualified && configName(c) != config {
			continue
		}
		for _, h := range hooks(c) {
			if h == name {
				drop[configName(c)+"/"+h] = true
				found++
			}
		}
	}
	return found
}

// keep is copies of configs without the webhooks drop names
// (CONFIGURATION/NAME); a configuration left without webhooks is left
// out.
func keep[C, W any](configs []*C, deepCopy func(*C) *C, configName func(*C) string, webhooks func(*C) *[]W, hookName func(W) string, drop map[string]bool) []*C {
	var out []*C
	for _, c := range configs {
		kept := deepCopy(c)
		hooks := webhooks(kept)
		*hooks = slices.DeleteFunc(*hooks, func(w W) bool { return drop[configName(c)+"/"+hookName(w)] })
		if len(*hooks) > 0 {
			out = append(out, kept)
		}
	}
	return out
}

func webhookNamesOf[W any](hooks []W, name func(W) string) []string {
	out := make([]string, len(hooks))
	for i, h := range hooks {
		out[i] = name(h)
	}
	return out
}

// allNames are the CONFIGURATION/NAME of every webhook of configs.
func allNames[C any](configs []C, configName func(C) string, hooks func(C) []string) []string {
	var names []string
	for _, c := range configs {
		for _, h := range hooks(c) {
			names = append(names, configName(c)+"/"+h)
		}
	}
	return names
}

// Outcome is what one chain does with one object.
type Outcome struct {
	// Object is what kube-apiserver would store (nil when the request was
	// refused).
	Object map[string]any `json:"object,omitempty"`
	// Refused is kube-apiserver's refusal as its Status.message: a denial
	// by a policy, a webhook or an admission plugin, a decoding error or
	// the registry's validation (422). Code is the Status code.
	Refused string `json:"refused,omitempty"`
	Code    int32  `json:"code,omitempty"`
	// Warnings are the warnings the request would get.
	Warnings []string `json:"warnings,omitempty"`
}

// Outcome in words: "stored", or "refused (CODE): MESSAGE".
func (o Outcome) String() string {
	if o.Refused != "" {
		return fmt.Sprintf("refused (%d): %s", o.Code, o.Refused)
	}
	return "stored"
}

// A Side admits one object through one chain. The error is for what is not
// kube-apiserver's answer (a bad object, a chain that cannot be built);
// refusals are in the Outcome.
type Side func(ctx context.Context, obj manifest.Object) (Outcome, error)

// Difference is how the two outcomes of an object differ.
type Difference string

// The differences, from none to the most severe.
const (
	// Same: both chains store the same object, or refuse with the same
	// message.
	Same Difference = "same"
	// Changed: both store the object, but not the same one.
	Changed Difference = "changed"
	// Refusal: one chain stores the object and the other refuses it, or
	// both refuse with different messages.
	Refusal Difference = "refusal"
	// Failed: a chain could not admit the object at all.
	Failed Difference = "error"
)

// Result is the check of one object.
type Result struct {
	// Source is where the object was read, Object its kind and name.
	Source string `json:"source"`
	Object string `json:"object"`
	// Webhooks is the outcome with the webhooks, Policies the one with the
	// policies in their place.
	Webhooks Outcome `json:"webhooks"`
	Policies Outcome `json:"policies"`
	// Difference classifies the result; Diff is the unified diff of the
	// stored objects (Changed), from the webhooks' to the policies'.
	Difference Difference `json:"difference"`
	Diff       string     `json:"diff,omitempty"`
	// Error is a chain's failure (Failed).
	Error string `json:"error,omitempty"`
}

// Report is the check of every object, in input order.
type Report struct {
	Results []Result `json:"results"`
	Summary Summary  `json:"summary"`
}

// Summary counts the results by difference.
type Summary struct {
	Objects int `json:"objects"`
	Same    int `json:"same"`
	Changed int `json:"changed"`
	Refusal int `json:"refusal"`
	Failed  int `json:"error"`
}

// Differs reports whether any object differs (or failed).
func (r *Report) Differs() bool { return r.Summary.Objects != r.Summary.Same }

// Options tune CheckWith.
type Options struct {
	// SameDecision compares refusals by decision only: two refusals are
	// Same whatever their messages and codes (a ValidatingAdmissionPolicy
	// never refuses in a webhook's words).
	SameDecision bool
}

// Check runs every object through both sides and compares them. It stops
// only when ctx is done.
func Check(ctx context.Context, objects []manifest.Object, webhooks, policies Side) (*Report, error) {
	return CheckWith(ctx, objects, webhooks, policies, Options{})
}

// CheckWith is Check with opts.
func CheckWith(ctx context.Context, objects []manifest.Object, webhooks, policies Side, opts Options) (*Report, error) {
	rep := &Report{Results: make([]Result, 0, len(objects))}
	for _, obj := range objects {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		res := Result{Source: obj.Source.String(), Object: describe(obj)}
		w, werr := webhooks(ctx, obj)
		p, perr := policies(ctx, obj)
		res.Webhooks, res.Policies = w, p
		switch {
		case werr != nil || perr != nil:
			res.Difference = Failed
			var msgs []string
			if werr != nil {
				msgs = append(msgs, "with the webhooks: "+werr.Error())
			}
			if perr != nil {
				msgs = append(msgs, "with the policies: "+perr.Error())
			}
			res.Error = strings.Join(msgs, "; ")
		default:
			res.Difference = compare(w, p)
			if opts.SameDecision && w.Refused != "" && p.Refused != "" {
				res.Difference = Same
			}
			if res.Difference == Changed {
				d, err := explain.Diff("webhooks", "policies", w.Object, p.Object)
				if err != nil {
					return rep, err
				}
				res.Diff = d
			}
		}
		rep.add(res)
	}
	return rep, nil
}

func (r *Report) add(res Result) {
	r.Results = append(r.Results, res)
	s := &r.Summary
	s.Objects++
	switch res.Difference {
	case Same:
		s.Same++
	case Changed:
		s.Changed++
	case Refusal:
		s.Refusal++
	default:
		s.Failed++
	}
}

func compare(a, b Outcome) Difference {
	switch {
	case a.Refused != "" || b.Refused != "":
		if a.Refused == b.Refused && a.Code == b.Code {
			return Same
		}
		return Refusal
	case equality.Semantic.DeepEqual(a.Object, b.Object):
		return Same
	}
	return Changed
}

func describe(obj manifest.Object) string {
	u := obj.Object
	if u == nil {
		return "(no object)"
	}
	name := u.GetName()
	if ns := u.GetNamespace(); ns != "" {
		name = ns + "/" + name
	}
	return fmt.Sprintf("%s %s", strings.ToLower(u.GetKind()), name)
}
