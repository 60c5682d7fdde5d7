package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"gomodules.xyz/jsonpatch/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apiserver/pkg/admission"
	"sigs.k8s.io/yaml"

	"github.com/mutatis-dev/mutatis/cluster"
	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/explain"
	"github.com/mutatis-dev/mutatis/lint"
	"github.com/mutatis-dev/mutatis/manifest"
	"github.com/mutatis-dev/mutatis/scheme/admissionplugins"
	"github.com/mutatis-dev/mutatis/webhookclient"
)

// addAdmissionPluginFlags adds kube-apiserver's flags that choose its
// admission plugins (the ones before the policies run offline).
func addAdmissionPluginFlags(f *pflag.FlagSet, p *admissionplugins.Flags) {
	f.StringSliceVar(&p.Enable, "enable-admission-plugins", nil, "admission plugins to run besides kube-apiserver 1.37's default ones, named as kube-apiserver names them (docs/chain.md: which run offline; disabling ValidatingAdmissionPolicy, ValidatingAdmissionWebhook or PodSecurity skips that part of the validating stage)")
	f.StringSliceVar(&p.Disable, "disable-admission-plugins", nil, "admission plugins of kube-apiserver's default set not to run")
	f.StringSliceVar(&p.Only, "admission-plugins", nil, "the exact set of admission plugins (as kube-apiserver's --admission-control); excludes the two flags above")
	f.StringVar(&p.ConfigFile, "admission-control-config-file", "", "kube-apiserver's AdmissionConfiguration file, configuring its admission plugins (PodSecurity's defaults and exemptions)")
}

type applyOptions struct {
	chainFlags

	objects                []string
	oldObject              string
	policies, resources    []string
	operation, subresource string
	user                   userFlags
	namespace              string
	dryRun, explain        bool
	noDefaults, noValidate bool
	closedNamespaces       bool
	output                 string
	color                  colorMode
}

func newApplyCommand() *cobra.Command {
	o := &applyOptions{}
	cmd := &cobra.Command{
		Use:   "apply -f OBJECT --policies PATH [flags]",
		Short: "Admit one object through MutatingAdmissionPolicies, offline",
		Long: `apply runs one admission request through the policies and bindings found in
--policies, with everything else that exists in the simulated cluster
(Namespaces, params, CRDs) from --resources, and prints the result.

The object (and the old object) is decoded and defaulted as kube-apiserver
decodes a request body and goes through the admission plugins a default
kube-apiserver 1.37 runs before the policies (a Pod's service account and
token volume, LimitRange defaults, priority and tolerations, a PVC's
default StorageClass, an Ingress's default IngressClass …; they read the
ServiceAccounts, LimitRanges, PriorityClasses, StorageClasses,
IngressClasses, RuntimeClasses, Namespaces and Nodes of --resources; other
plugins with --enable-admission-plugins, --disable-admission-plugins or
--admission-plugins, named as kube-apiserver names them), every mutation's
result is defaulted as its dispatcher does, and the admitted object is converted through its internal
version and validated as the registry would before storing it; the output
is the object kube-apiserver would store. --no-defaults evaluates the
objects exactly as written; --no-validate skips the validation.

With --webhooks, the MutatingWebhookConfigurations found there are called
after the policies (configurations by name, webhooks in order; services
reached through --service-url), and the whole chain runs as kube-apiserver
runs it: when a policy or a webhook changed the object, the admission
plugins, the policies and the webhooks run once more by their
reinvocation rules (without webhooks too: a policy's sidecar gets the
service account token mount the plugins give every container). --explain
shows every webhook call beside the policies and plugins (docs/chain.md).
The ValidatingWebhookConfigurations found there are called once, all at
once, on the object the registry would store (a DELETE's old object),
after validation and the ValidatingAdmissionPolicies.

Exit status: 0 admitted (stdout: the stored object, or the diff from the
input to it, or the patch admission made);
1 denied, refused by decoding (400), by an admission plugin (403), by a
webhook or its failure policy, or by validation (422) (stderr: the
message exactly as kube-apiserver's Status.message); 2 bad input.

-o result prints kube-apiserver's answer as JSON, admitted or refused:
{"source", "kind", "namespace", "name" (as -o patch names the object),
"allowed", "object" (what -o json prints) and "patch" (what -o patch
prints) when admitted, "warnings" as returned, "auditAnnotations" (every
stage's, keyed as kube-apiserver's audit event records them), "status"
(the refusal's Status: code, reason, message) when refused}; the exit
status is the same.

Several objects (several -f, a directory, a multi-document file, a List
or a stream on stdin: helm template ... | mutatis apply -f - --policies p/)
are admitted one by one, each through its own request. stdout has the
admitted objects in input order: YAML documents, a List with -o json, one
JSON line per object with -o patch ({"source", "kind", "namespace",
"name", "patch"}), one diff per object with -o diff; a refused object is
left out, except with -o result: a JSON array of every object's result
(one of bad input with "error", its message). stderr has a line per
object (admitted, denied with kube-apiserver's message, or the error)
and a total. The exit status is the
worst of the objects': 2 if any had bad input, else 1 if any was refused.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runApply(cmd, o) },
	}
	f := cmd.Flags()
	f.StringSliceVarP(&o.objects, "filename", "f", nil, "the objects under admission: files, directories, or - for stdin; repeat -f for more (each object is admitted on its own)")
	f.StringSliceVar(&o.policies, "policies", nil, "files or directories of MutatingAdmissionPolicies, ValidatingAdmissionPolicies and their bindings")
	f.StringSliceVar(&o.resources, "resources", nil, "files or directories of other cluster objects: Namespaces, params, CRDs")
	f.StringVar(&o.oldObject, "old-object", "", "the old object (makes the operation UPDATE by default)")
	f.StringVar(&o.operation, "operation", "", "CREATE, UPDATE, DELETE or CONNECT (default CREATE, or UPDATE with --old-object); a DELETE deletes the object of --old-object, else of -f, and prints nothing when admitted")
	f.StringVar(&o.subresource, "subresource", "", "the subresource of the request")
	o.user.add(f)
	f.StringVarP(&o.namespace, "namespace", "n", "", "the namespace of the request (default: the object's, or default)")
	f.BoolVar(&o.dryRun, "dry-run", false, "mark the request as a dry run")
	f.StringVarP(&o.output, "output", "o", "yaml", "yaml, json, patch, diff or result (JSON: kube-apiserver's answer, the object, patch, warnings and audit annotations, refused or not)")
	f.BoolVar(&o.explain, "explain", false, "print the evaluation trace on stderr")
	o.color = colorAuto
	f.Var(&o.color, "color", "color -o diff: auto (on a terminal, unless NO_COLOR is set), always (also bare --color) or never")
	f.Lookup("color").NoOptDefVal = string(colorAlways)
	f.BoolVar(&o.noDefaults, "no-defaults", false, "evaluate the objects exactly as written: no request decoding, defaulting or validation")
	f.BoolVar(&o.noValidate, "no-validate", false, "do not validate the admitted object as kube-apiserver's registry would")
	f.BoolVar(&o.closedNamespaces, "closed-namespaces", false, "the Namespaces of --resources are all the cluster's (with default, kube-system, kube-public, kube-node-lease): a request in another is refused with kube-apiserver's 404 instead of being admitted in a namespace made up with its name label")
	o.chainFlags.add(f)
	_ = cmd.MarkFlagRequired("filename")
	_ = cmd.MarkFlagRequired("policies")
	return cmd
}

func badInput(err error) error { return &exitError{code: exitUsage, err: err} }

func runApply(cmd *cobra.Command, o *applyOptions) error {
	ctx := cmd.Context()
	stderr := cmd.ErrOrStderr()
	switch o.output {
	case "yaml", "json", "patch", "diff", "result":
	default:
		return badInput(fmt.Errorf("--output must be yaml, json, patch, diff or result, not %q", o.output))
	}
	objects, oldObject, err := readApplyObjects(ctx, o.objects, o.oldObject, cmd.InOrStdin())
	if err != nil {
		return badInput(err)
	}
	policySet, err := manifest.Load(ctx, o.policies, cmd.InOrStdin())
	if err != nil {
		return badInput(err)
	}
	comp, err := compiler.New()
	if err != nil {
		return err
	}
	// API validation of the policies comes first: its error is the one
	// reported whatever else is wrong. It runs on a goroutine of its own
	// from here (lint.Checks), beside the loading of the other inputs and
	// the first object's decoding; an error of those waits for it
	// (Preceded), and so does reading standard input, which an invalid
	// policy leaves unread.
	checks := lint.StartChecks(comp, policySet)
	if slices.Contains(o.webhooks.paths, "-") || slices.Contains(o.resources, "-") {
		if err := checks.Validation(); err != nil {
			return badInput(err)
		}
	}
	webhooks, err := o.webhooks.load(ctx, cmd.InOrStdin())
	if err != nil {
		return badInput(checks.Preceded(err))
	}
	urls, err := o.webhooks.urls()
	if err != nil {
		return badInput(checks.Preceded(err))
	}
	var resources manifest.Set
	if len(o.resources) > 0 {
		rs, err := manifest.Load(ctx, o.resources, cmd.InOrStdin())
		if err != nil {
			return badInput(checks.Preceded(err))
		}
		resources = *rs
	}
	clusterObjects := append(policySet.Objects, resources.Objects...)
	notices := &heldWriter{held: true}
	opts := cluster.Options{NoDefaults: o.noDefaults, NoValidate: o.noValidate, ClosedNamespaces: o.closedNamespaces, OnSynthesize: func(name string) {
		fmt.Fprintf(notices, "notice: namespace %q is not in --resources; using one with only the kubernetes.io/metadata.name label\n", name)
	}}
	// Plugin flags kube-apiserver refuses are reported after the checks
	// below; the cluster is built without them.
	_, pluginsErr := admissionplugins.Enabled(o.plugins)
	if pluginsErr == nil {
		opts.AdmissionPlugins = o.plugins
	}
	sim, err := cluster.New(clusterObjects, opts)
	if err != nil {
		return badInput(checks.Preceded(err))
	}
	// lint's checks (printed before anything else, unless the validation
	// fails) run on a goroutine of their own too, while this one decodes
	// the first object; what the decoding prints is held until they are
	// printed.
	checks.Lint(clusterObjects, len(o.resources) > 0)
	// printChecked waits for the validation and the checks and prints the
	// checks' findings, then what was held; it returns the validation
	// error.
	printChecked := sync.OnceValue(func() error {
		verr := checks.Validation()
		findings := checks.Findings()
		if verr != nil {
			return badInput(verr)
		}
		for _, f := range findings {
			io.WriteString(stderr, lintLine(f))
		}
		notices.release(stderr)
		return nil
	})
	if pluginsErr != nil {
		if verr := printChecked(); verr != nil {
			return verr
		}
		return badInput(pluginsErr)
	}
	var op admission.Operation
	if o.operation != "" {
		op = admission.Operation(strings.ToUpper(o.operation))
		switch op {
		case admission.Create, admission.Update, admission.Connect, admission.Delete:
		default:
			if err := printChecked(); err != nil {
				return err
			}
			return badInput(fmt.Errorf("--operation must be CREATE, UPDATE, DELETE or CONNECT, not %q", o.operation))
		}
	}
	// The chain is built once, on the first object that needs it, and
	// serves every object: policies, then the webhooks' dispatcher (one
	// HTTP client per configuration, connections kept).
	chain := cluster.NewLazyChain(func() (cluster.Chain, error) {
		policies, bindings := policySet.APIObjects()
		ev, err := sim.Evaluator(comp, policies, bindings)
		if err != nil {
			return cluster.Chain{}, err
		}
		ch, err := sim.WithWebhooks(cluster.Chain{Policies: ev}, webhooks, urls)
		if err != nil {
			return ch, badInput(err)
		}
		// The ValidatingAdmissionPolicies of --policies: the validating
		// stage, after the registry's validation.
		if vps, vbs := policySet.ValidatingAPIObjects(); len(vps) > 0 {
			vev, err := sim.ValidatingPolicies(nil, vps, vbs)
			if err != nil {
				return ch, err
			}
			ch.ValidatingPolicies = vev
		}
		return ch, nil
	})
	defer chain.Close()
	if len(objects) > 1 || len(o.objects) > 1 {
		if err := printChecked(); err != nil {
			return err
		}
		return applyMany(ctx, cmd, o, sim, chain, webhooks, op, objects)
	}
	name, object := o.objects[0], objects[0].Object
	// The object as -o patch names it, before its decoding (in place).
	kind, ns, objName := object.GetKind(), object.GetNamespace(), object.GetName()
	printResultOf := func(out *cluster.Outcome) error {
		if r, ok := newApplyResult(objects[0], kind, ns, objName, out); ok {
			return printApplyResults(cmd.OutOrStdout(), []*applyResult{r}, false)
		}
		return nil
	}
	if op == admission.Delete {
		// kube-apiserver's DELETE carries the stored object as the old
		// object and no object.
		if oldObject == nil {
			oldObject = object
		}
		object = nil
	}
	decoded, decodeErr := sim.DecodeSteps(o.request(op, object, oldObject))
	err = printDecoded(notices, o, sim, name, decoded, decodeErr)
	if err == nil {
		// Compile the policies for admission while the checks finish; the
		// chain keeps what this returns for AdmitDecoded.
		chain.Chain()
	}
	if verr := printChecked(); verr != nil {
		return verr
	}
	if err != nil {
		if o.output == "result" {
			if perr := printResultOf(&cluster.Outcome{Decoded: decoded, DecodeErr: decodeErr}); perr != nil {
				return perr
			}
		}
		return err
	}
	out := sim.AdmitDecoded(ctx, chain, object, decoded, cluster.AdmitOptions{Warm: o.explain})
	before, after, err := printAdmission(stderr, o, webhooks, name, out)
	if o.output == "result" {
		if perr := printResultOf(out); perr != nil {
			return perr
		}
		return err
	}
	if err != nil {
		return err
	}
	if object == nil {
		// A DELETE: no object to print.
		return nil
	}
	return printResult(cmd.OutOrStdout(), o.output, o.color, before, after)
}

// heldWriter holds what is written to it until release, then writes
// through. It is not safe for concurrent use.
type heldWriter struct {
	held bool
	buf  bytes.Buffer
	w    io.Writer
}

func (h *heldWriter) Write(p []byte) (int, error) {
	if h.held {
		return h.buf.Write(p)
	}
	return h.w.Write(p)
}

// release writes what was held to w, where later writes go too.
func (h *heldWriter) release(w io.Writer) {
	h.held, h.w = false, w
	w.Write(h.buf.Bytes())
	h.buf.Reset()
}

// request is the request of object with oldObject, as apply's flags
// make it.
func (o *applyOptions) request(op admission.Operation, object, oldObject *unstructured.Unstructured) cluster.Request {
	return cluster.Request{
		Object: object, OldObject: oldObject, Operation: op, Subresource: o.subresource,
		Namespace: o.namespace, DryRun: o.dryRun,
		User:          o.user.info(),
		PluginChanges: o.explain,
	}
}

// printDecoded prints what the decoding of a request (object named name
// in errors) tells on stderr: with --explain the built-in admission
// plugins' trace. It returns the decoding's error err as the command's: a
// refusal is an exitError. The decoding's warnings are printed with the
// request's others (printAdmission), as kube-apiserver returns them all.
func printDecoded(stderr io.Writer, o *applyOptions, sim *cluster.Cluster, name string, decoded *cluster.Decoded, err error) error {
	if o.explain && decoded != nil && !o.noDefaults {
		run, rerr := sim.Plugins.Names()
		if rerr != nil {
			return rerr
		}
		explain.Plugins(stderr, run, decoded.Plugins)
	}
	var status *apierrors.StatusError
	if errors.As(err, &status) {
		// kube-apiserver refuses to decode the request body (400), or an
		// admission plugin refuses the request (403).
		return &exitError{code: exitProblem, err: errors.New(status.ErrStatus.Message)}
	}
	if err != nil {
		return badInput(fmt.Errorf("%s: %w", name, err))
	}
	return nil
}

// printAdmission prints the admission out of a decoded request (object
// named name in errors) on stderr: its warnings, with --explain the
// chain's trace, notes on the webhooks that failed. It returns the object
// before and after admission, or an exitError when kube-apiserver would
// refuse it.
func printAdmission(stderr io.Writer, o *applyOptions, webhooks []webhookclient.Configuration, name string, out *cluster.Outcome) (before, after map[string]any, err error) {
	switch {
	case out.ChainErr != nil:
		err = out.ChainErr
	case out.ObjectErr != nil:
		err = badInput(fmt.Errorf("%s: %w", name, out.ObjectErr))
	case out.Err != nil:
		err = out.Err
	}
	if err != nil {
		// A request that fails before its admission is done (bad input, a
		// failure of mutatis) prints the decoding's warnings alone.
		printWarnings(stderr, explain.Returned(out.Decoded.Warnings)[0])
		return nil, nil, err
	}
	adm := out.Admission
	// The warnings of every stage, as kube-apiserver returns them: each
	// text once, in order (the decoder's, the mutating chain's, the
	// registry's, the validating stage's), each printed where its stage's
	// are.
	warnings := explain.Returned(out.Decoded.Warnings, adm.Result.Warnings, adm.Warnings, adm.Validation.Warnings)
	printWarnings(stderr, warnings[0])
	if o.explain {
		trace := explain.PrintableWriter(stderr)
		explain.Chain(trace, adm.Result)
		if adm.Result.Denied != nil {
			// The registry's validation never ran on a refused request.
			explain.ValidationNotRun(trace)
		} else {
			explain.Validation(trace, adm.Invalid, adm.Warnings)
		}
		if adm.Result.Denied == nil && adm.Invalid == nil {
			explain.ValidatingStage(trace, adm.Validation)
		}
	}
	printWarnings(stderr, warnings[1])
	for _, note := range webhookFailures(webhooks, adm.Result.Calls, false) {
		fmt.Fprintf(stderr, "note: %s\n", explain.Printable(note))
	}
	// Errors that failurePolicy Ignore dropped: kube-apiserver says nothing
	// of them, a policy author needs to know.
	printWarnings(stderr, explain.IgnoredWarnings(adm.Result))
	if adm.Result.Denied != nil {
		return nil, nil, &exitError{code: exitProblem, err: errors.New(adm.Result.Denied.ErrStatus.Message)}
	}
	printWarnings(stderr, warnings[2])
	if adm.Invalid != nil {
		return nil, nil, &exitError{code: exitProblem, err: errors.New(adm.Invalid.ErrStatus.Message)}
	}
	printWarnings(stderr, warnings[3])
	for _, note := range webhookFailures(webhooks, adm.Validation.Calls, true) {
		fmt.Fprintf(stderr, "note: %s\n", explain.Printable(note))
	}
	if adm.Validation.Denied != nil {
		return nil, nil, &exitError{code: exitProblem, err: errors.New(adm.Validation.Denied.ErrStatus.Message)}
	}
	return out.Before, printedObject(o.output, adm), nil
}

// printedObject is what apply prints of an admitted request: the object
// kube-apiserver would store (after its registry's strategy, which derives
// fields such as a Pod's status.qosClass from the admitted object, and the
// storage round trip, which prunes a custom resource), or, with -o patch,
// the admitted object, so that the patch is admission's (the policies',
// webhooks' and plugins' changes, as a webhook's answer would carry them).
// An object that was not validated (--no-validate, --no-defaults, a
// subresource, a kind without a strategy) is printed as admitted.
func printedObject(output string, adm *cluster.Admission) map[string]any {
	if adm.Stored == nil || output == "patch" {
		return adm.Object
	}
	return adm.Stored
}

// printWarnings prints warnings as kubectl does (Printable: the ones
// kube-apiserver returns have no control characters; mutatis's own notes
// of ignored errors may quote a webhook's words).
func printWarnings(w io.Writer, warnings []string) {
	for _, text := range warnings {
		fmt.Fprintf(w, "Warning: %s\n", explain.Printable(text))
	}
}

// readObjects reads the request's object from path and, when oldPath is
// not empty, its old object.
func readObjects(ctx context.Context, path, oldPath string, stdin io.Reader) (object, oldObject *unstructured.Unstructured, err error) {
	if object, err = readObject(ctx, path, stdin); err != nil || oldPath == "" {
		return object, nil, err
	}
	oldObject, err = readObject(ctx, oldPath, stdin)
	return object, oldObject, err
}

// firstPolicyObject names the first policy or binding of set (which has
// one), by kind: mutating policies, bindings, then validating ones, and
// what the kind is ("policies" or "bindings").
func firstPolicyObject(set *manifest.Set) (source manifest.Source, kind, name, what string) {
	switch {
	case len(set.Policies) > 0:
		return set.Policies[0].Source, "MutatingAdmissionPolicy", set.Policies[0].Policy.Name, "policies"
	case len(set.Bindings) > 0:
		return set.Bindings[0].Source, "MutatingAdmissionPolicyBinding", set.Bindings[0].Binding.Name, "bindings"
	case len(set.ValidatingPolicies) > 0:
		return set.ValidatingPolicies[0].Source, "ValidatingAdmissionPolicy", set.ValidatingPolicies[0].Policy.Name, "policies"
	}
	return set.ValidatingBindings[0].Source, "ValidatingAdmissionPolicyBinding", set.ValidatingBindings[0].Binding.Name, "bindings"
}

// readApplyObjects reads the requests' objects from paths and, when oldPath is
// not empty, the old object (of one object only). One path must give one
// object, as it always did; several paths or a path of several objects
// give them all, in input order. Policies and bindings belong in
// --policies.
func readApplyObjects(ctx context.Context, paths []string, oldPath string, stdin io.Reader) (objects []manifest.Object, oldObject *unstructured.Unstructured, err error) {
	set, err := manifest.Load(ctx, paths, stdin)
	if err != nil {
		return nil, nil, err
	}
	other := len(set.Policies) + len(set.Bindings) + len(set.ValidatingPolicies) + len(set.ValidatingBindings)
	switch {
	case len(paths) == 1 && len(set.Objects) <= 1 && (len(set.Objects) == 0 || other != 0):
		return nil, nil, fmt.Errorf("%s: want exactly one object, found %d", paths[0], len(set.Objects)+other)
	case len(set.Objects) == 0:
		return nil, nil, fmt.Errorf("%s: want at least one object, found none", strings.Join(paths, ", "))
	case other > 0:
		source, kind, name, what := firstPolicyObject(set)
		return nil, nil, fmt.Errorf("%s: %s %q is not an object to admit (%s go in --policies)", source, kind, name, what)
	}
	if oldPath == "" {
		return set.Objects, nil, nil
	}
	if len(set.Objects) != 1 {
		return nil, nil, fmt.Errorf("--old-object is the old object of one object, and -f gave %d", len(set.Objects))
	}
	oldObject, err = readObject(ctx, oldPath, stdin)
	return set.Objects, oldObject, err
}

func readObject(ctx context.Context, path string, stdin io.Reader) (*unstructured.Unstructured, error) {
	set, err := manifest.Load(ctx, []string{path}, stdin)
	if err != nil {
		return nil, err
	}
	if other := len(set.Policies) + len(set.Bindings) + len(set.ValidatingPolicies) + len(set.ValidatingBindings); len(set.Objects) != 1 || other != 0 {
		return nil, fmt.Errorf("%s: want exactly one object, found %d", path, len(set.Objects)+other)
	}
	return set.Objects[0].Object, nil
}

func printResult(w io.Writer, format string, color colorMode, before, after map[string]any) error {
	switch format {
	case "json":
		b, err := json.MarshalIndent(after, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(w, string(b))
		return err
	case "patch":
		ops, err := objectPatch(before, after)
		if err != nil {
			return err
		}
		out, err := json.Marshal(ops)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(w, string(out))
		return err
	case "diff":
		text, err := explain.Diff("input", "admitted", before, after)
		if err != nil {
			return err
		}
		if color.colors(w) {
			text = explain.Colorize(text)
		}
		_, err = io.WriteString(w, text)
		return err
	}
	b, err := yaml.Marshal(after)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// objectPatch is the JSON patch that turns before into after.
func objectPatch(before, after map[string]any) ([]jsonpatch.Operation, error) {
	a, _ := json.Marshal(before)
	b, _ := json.Marshal(after)
	ops, err := jsonpatch.CreatePatch(a, b)
	if err != nil {
		return nil, err
	}
	// Never reorder: operations on the same list depend on each other's
	// indexes (two removals must go from the highest index down).
	if ops == nil {
		ops = []jsonpatch.Operation{}
	}
	return ops, nil
}
