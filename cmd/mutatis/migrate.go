package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apiserver/pkg/admission"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/cluster"
	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/manifest"
	"github.com/mutatis-dev/mutatis/migrate"
	"github.com/mutatis-dev/mutatis/webhookclient"
)

type migrateOptions struct {
	chainFlags // declared with migrate-check's own texts

	objects, policies    []string
	resources, replaces  []string
	operation, namespace string
	user                 userFlags
	dryRun, verbose      bool
	sameDecision         bool
	output               string
}

func newMigrateCheckCommand() *cobra.Command {
	o := &migrateOptions{}
	cmd := &cobra.Command{
		Use:   "migrate-check --webhooks PATH --policies PATH -f OBJECTS [flags]",
		Short: "Compare what webhooks and the policies that replace them do to objects",
		Long: `migrate-check is the check to run before switching a mutating webhook off for
the MutatingAdmissionPolicies that replace it. Every object of -f goes
through kube-apiserver's mutating admission chain twice, offline (docs/chain.md):

  with the webhooks   the built-in admission plugins, then the webhooks of
                      --webhooks (what the cluster runs today);
  with the policies   the built-in admission plugins, the policies of
                      --policies, then the webhooks that stay: all of them but
                      those --replaces POLICY=WEBHOOK names (WEBHOOK is a
                      webhook's name, or CONFIGURATION/NAME), or none when no
                      --replaces is given.

Both chains reinvoke as kube-apiserver does, and the admitted objects are
validated as its registry would; what is compared is what it would store
(or its refusal, by message and code). The report names each object that
differs: stored differently (with the diff, from the webhooks' result to
the policies'), refused by one chain and not the other or with another
message, or an object a chain could not admit; then a summary.

ValidatingWebhookConfigurations and the ValidatingAdmissionPolicies that
replace them are compared the same way: --webhooks takes both kinds of
configuration and --policies both kinds of policy (with their bindings);
each chain then runs kube-apiserver's validating stage after the registry's
validation (the built-in plugins' validating halves, the policies, the
validating webhooks that stay: docs/chain.md), and a refusal there is the
chain's outcome. --replaces VAP=WEBHOOK names a validating webhook. A
ValidatingAdmissionPolicy never refuses in a webhook's words: with
--same-decision two refusals count as the same whatever their messages.

Webhooks are called for real (their clientConfig URLs, services through
--service-url), once per chain and object.

Exit status: 0 no object differs; 1 some object differs; 2 bad input.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runMigrateCheck(cmd, o) },
	}
	f := cmd.Flags()
	f.StringSliceVarP(&o.objects, "filename", "f", nil, "the objects to admit: files or directories (multi-document YAML, Lists; - for stdin)")
	f.StringSliceVar(&o.webhooks.paths, "webhooks", nil, "files or directories of the MutatingWebhookConfigurations the cluster runs")
	f.StringSliceVar(&o.policies, "policies", nil, "files or directories of the MutatingAdmissionPolicies and bindings that replace them")
	f.StringSliceVar(&o.resources, "resources", nil, "files or directories of other cluster objects: Namespaces, params, CRDs, the objects the admission plugins read")
	f.StringArrayVar(&o.replaces, "replaces", nil, "POLICY=WEBHOOK: the policy replaces the webhook (repeatable; default: the policies replace every webhook)")
	f.StringArrayVar(&o.webhooks.serviceURLs, "service-url", nil, "NS/NAME[:PORT]=URL: reach a webhook's clientConfig.service at URL (repeatable)")
	f.StringVar(&o.operation, "operation", "CREATE", "CREATE, UPDATE (each object updated without change: old object = object), or DELETE (each object deleted: old object = object, no object)")
	f.StringVarP(&o.namespace, "namespace", "n", "", "the namespace of the requests (default: each object's, or default)")
	o.user.add(f)
	f.BoolVar(&o.dryRun, "dry-run", false, "mark the requests as dry runs (webhooks with sideEffects Unknown or Some then refuse them, as kube-apiserver does)")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "also list the objects that do not differ")
	f.BoolVar(&o.sameDecision, "same-decision", false, "count two refusals as the same whatever their messages and codes (a ValidatingAdmissionPolicy replacing a validating webhook)")
	f.StringVarP(&o.output, "output", "o", "text", "text or json")
	addAdmissionPluginFlags(f, &o.plugins)
	for _, name := range []string{"filename", "webhooks", "policies"} {
		_ = cmd.MarkFlagRequired(name)
	}
	return cmd
}

func runMigrateCheck(cmd *cobra.Command, o *migrateOptions) error {
	ctx := cmd.Context()
	stdin, stderr := cmd.InOrStdin(), cmd.ErrOrStderr()
	if o.output != "text" && o.output != "json" {
		return badInput(fmt.Errorf("--output must be text or json, not %q", o.output))
	}
	op := admission.Operation(strings.ToUpper(o.operation))
	if op != admission.Create && op != admission.Update && op != admission.Delete {
		return badInput(fmt.Errorf("--operation must be CREATE, UPDATE or DELETE, not %q", o.operation))
	}
	replacements, err := migrate.ParseReplacements(o.replaces)
	if err != nil {
		return badInput(err)
	}
	urls, err := o.webhooks.urls()
	if err != nil {
		return badInput(err)
	}

	policySet, err := manifest.Load(ctx, o.policies, stdin)
	if err != nil {
		return badInput(err)
	}
	configs, err := o.webhooks.load(ctx, stdin)
	if err != nil {
		return badInput(err)
	}
	if len(configs) == 0 {
		return badInput(fmt.Errorf("--webhooks %s: no MutatingWebhookConfiguration found", strings.Join(o.webhooks.paths, ", ")))
	}
	objects, err := manifest.Load(ctx, o.objects, stdin)
	if err != nil {
		return badInput(err)
	}
	if n := len(objects.Policies) + len(objects.Bindings) + len(objects.ValidatingPolicies) + len(objects.ValidatingBindings); n > 0 {
		return badInput(fmt.Errorf("-f %s: %d MutatingAdmissionPolicies or bindings among the objects: give them with --policies", strings.Join(o.objects, ", "), n))
	}
	if len(objects.Objects) == 0 {
		return badInput(fmt.Errorf("-f %s: no object found", strings.Join(o.objects, ", ")))
	}
	var resources manifest.Set
	if len(o.resources) > 0 {
		rs, err := manifest.Load(ctx, o.resources, stdin)
		if err != nil {
			return badInput(err)
		}
		resources = *rs
	}

	comp, err := compiler.New()
	if err != nil {
		return err
	}
	if err := cluster.ValidatePolicies(comp, policySet.Policies); err != nil {
		return badInput(err)
	}
	policies, bindings := policySet.APIObjects()
	names := make([]string, len(policies))
	for i, p := range policies {
		names[i] = p.Name
	}
	vpolicies, vbindings := policySet.ValidatingAPIObjects()
	vnames := make([]string, len(vpolicies))
	for i, p := range vpolicies {
		vnames[i] = p.Name
	}
	all, vall := webhookclient.APIObjects(configs), webhookclient.ValidatingAPIObjects(configs)
	kept, vkept, err := migrate.WithoutAll(all, vall, replacements, names, vnames)
	if err != nil {
		return badInput(err)
	}

	synthesized := map[string]bool{}
	sim, err := cluster.New(append(policySet.Objects, resources.Objects...), cluster.Options{AdmissionPlugins: o.plugins, OnSynthesize: func(name string) {
		if !synthesized[name] {
			synthesized[name] = true
			fmt.Fprintf(stderr, "notice: namespace %q is not in --resources; using one with only the kubernetes.io/metadata.name label\n", name)
		}
	}})
	if err != nil {
		return badInput(err)
	}
	ev, err := sim.Evaluator(comp, policies, bindings)
	if err != nil {
		return err
	}
	// Each chain: its mutating policies and webhooks, then its validating
	// ones (a stage without configurations is left out of the chain).
	var closers []func()
	defer func() {
		for _, c := range closers {
			c()
		}
	}()
	mutating := func(cs []*admissionregistrationv1.MutatingWebhookConfiguration) (*webhookclient.Dispatcher, error) {
		if len(cs) == 0 {
			return nil, nil
		}
		d, err := sim.Webhooks(cs, urls, webhookclient.Options{})
		if err == nil {
			closers = append(closers, func() { d.Close(nil) })
		}
		return d, err
	}
	validating := func(cs []*admissionregistrationv1.ValidatingWebhookConfiguration) (chain.Stage, error) {
		if len(cs) == 0 {
			return nil, nil
		}
		d, err := sim.ValidatingWebhooks(cs, urls, webhookclient.Options{}, nil)
		if err != nil {
			return nil, err
		}
		closers = append(closers, func() { d.Close(nil) })
		return d, nil
	}
	before, after := cluster.Chain{}, cluster.Chain{Policies: ev}
	if before.Webhooks, err = mutating(all); err != nil {
		return badInput(err)
	}
	if after.Webhooks, err = mutating(kept); err != nil {
		return badInput(err)
	}
	if before.ValidatingWebhooks, err = validating(vall); err != nil {
		return badInput(err)
	}
	if after.ValidatingWebhooks, err = validating(vkept); err != nil {
		return badInput(err)
	}
	if len(vpolicies) > 0 {
		vev, err := sim.ValidatingPolicies(nil, vpolicies, vbindings)
		if err != nil {
			return err
		}
		after.ValidatingPolicies = vev
	}
	u := o.user.info()
	side := func(ch cluster.Chain) migrate.Side {
		return func(ctx context.Context, obj manifest.Object) (migrate.Outcome, error) {
			req := cluster.Request{Object: obj.Object.DeepCopy(), Operation: op, Namespace: o.namespace, DryRun: o.dryRun, User: u}
			switch op {
			case admission.Update:
				req.OldObject = obj.Object.DeepCopy()
			case admission.Delete:
				// kube-apiserver's DELETE carries the stored object as the
				// old object and no object.
				req.Object, req.OldObject = nil, obj.Object
			}
			return migrate.Admit(ctx, sim, ch, req)
		}
	}
	rep, err := migrate.CheckWith(ctx, objects.Objects, side(before), side(after), migrate.Options{SameDecision: o.sameDecision})
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if o.output == "json" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintln(out, string(b)); err != nil {
			return err
		}
	} else if err := rep.WriteText(out, o.verbose); err != nil {
		return err
	}
	if rep.Differs() {
		return &exitError{code: exitProblem}
	}
	return nil
}
