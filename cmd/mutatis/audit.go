package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/mutatis-dev/mutatis/audit"
	"github.com/mutatis-dev/mutatis/cluster"
	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/explain"
	"github.com/mutatis-dev/mutatis/internal/memlimit"
	"github.com/mutatis-dev/mutatis/manifest"
	"github.com/mutatis-dev/mutatis/webhookclient"
)

type auditOptions struct {
	chainFlags

	kubeconfig      string
	policies        []string
	resources       []string
	clusterPolicies bool
	// clusterValidating reads the cluster's ValidatingAdmissionPolicies.
	clusterValidating bool
	// podSecurity is --pod-security.
	podSecurity    string
	allNamespaces  bool
	namespaces     []string
	selector       string
	kinds          []string
	operation      string
	as             string
	asGroups       []string
	workers        int
	output, report string
	failOn         []string
	object         string
	allPods, quiet bool
	pageSize       int64
	qps            float32
	burst          int
	noCompression  bool
	memoryLimit    string
	// requestTimeout, timeout, maxPages, maxPageBytes and
	// maxClusterObjects bound the reading of the cluster (issue 31).
	requestTimeout    time.Duration
	timeout           time.Duration
	maxPages          int
	maxPageBytes      string
	maxClusterObjects int
	// client, when set, replaces the one built from the kubeconfig (tests).
	client dynamic.Interface
}

// auditGCPercent is the collector's GOGC for an audit run under its soft
// memory limit when neither GOGC nor GOMEMLIMIT is set: the heap may grow
// to three times what is live between two collections instead of twice,
// half the cycles for an audit whose live heap (the simulated cluster, the
// findings, the pages in flight) is far below the limit; the limit still
// makes the collector work harder as the heap nears it, which bounds the
// resident set (docs/performance.md, "mutatis audit").
const auditGCPercent = 200

func newAuditCommand() *cobra.Command { return newAuditCommandWith(nil) }

// newAuditCommandWith is the audit command reading the cluster through
// client (nil: the one the kubeconfig names).
func newAuditCommandWith(client dynamic.Interface) *cobra.Command {
	o := &auditOptions{client: client}
	cmd := &cobra.Command{
		Use:   "audit [--kubeconfig FILE] (--policies PATH… | --cluster-policies) [flags]",
		Short: "Report what policies would do to a live cluster's objects (read only)",
		Long: `audit reads the objects of a live cluster that the policies' rules can match
(only those resources), with the Namespaces, CRDs, RBAC, param objects and
the objects kube-apiserver's admission plugins read, and evaluates each
object as if it were re-created (--operation CREATE, the default: without
uid, resourceVersion, creationTimestamp, generation, managedFields and, where
the registry drops it, status) or updated without change (UPDATE: the old
object is the object), exactly as 'mutatis apply' evaluates one object:
decoding, admission plugins, the policies, defaulting and validation.
With --webhooks (and --service-url), the MutatingWebhookConfigurations found
there are called after the policies, and the whole chain runs as
kube-apiserver runs it, reinvocation round included (docs/chain.md).

--policies evaluates policy files (the ones about to be rolled out);
--cluster-policies the cluster's own MutatingAdmissionPolicies and bindings.
Outcomes: change (with the JSON patch), deny (the message), invalid (the
422 of validation), error (refused before the policies, or the evaluation
failed), ignored (left unchanged, errors dropped by failurePolicy Ignore),
unchanged. Pods of one controller that would change the same way are one
line (--all-pods lists each).

The client only reads: any request but GET is refused before it is sent.
Pages (--page-size), a client-side rate limit (--qps, --burst) and retries
from the continue token protect the API server.

ValidatingAdmissionPolicies and bindings among --policies run in the
validating stage after the registry's validation, with the built-in
plugins' validating halves (PodSecurity from the Namespaces' labels …), as
kube-apiserver runs them: an object they refuse is deny (with the refusing
plugin), and every validation that fails on an object is listed with its
binding's validationActions, Audit and Warn too: what switching a binding
to Deny would refuse (--fail-on validation fails on any).
--cluster-validating-policies adds the cluster's own ValidatingAdmissionPolicies
and bindings (as they are deployed, Audit bindings included). The
ValidatingWebhookConfigurations among --webhooks are called in the same stage.
--pod-security LEVEL[:VERSION] audits every Namespace as if labelled
pod-security.kubernetes.io/enforce=LEVEL (Pods and the kinds with a pod
template audited too): what labelling them would refuse (Pods) or warn
about (their controllers); alone, or beside policies.

--object KIND/NAME [-n NS] explains one object: every policy and binding
that would act on it, and why the others would not.

Exit status: 0 done (and nothing --fail-on names was found); 1 an outcome
--fail-on names was found; 2 bad input, or the cluster could not be read.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runAudit(cmd, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "the kubeconfig of the cluster (default: $KUBECONFIG, ~/.kube/config, or the in-cluster config)")
	f.StringSliceVar(&o.policies, "policies", nil, "files or directories of MutatingAdmissionPolicies and bindings to audit")
	f.BoolVar(&o.clusterPolicies, "cluster-policies", false, "audit the cluster's own MutatingAdmissionPolicies and bindings")
	f.StringVar(&o.podSecurity, "pod-security", "", "audit every Namespace at this PodSecurity level, LEVEL[:VERSION] (privileged, baseline, restricted; latest or v1.N): its enforce label in place of the Namespace's own")
	f.BoolVar(&o.clusterValidating, "cluster-validating-policies", false, "audit the cluster's own ValidatingAdmissionPolicies and bindings too (with --policies, --cluster-policies, or alone)")
	f.StringSliceVar(&o.resources, "resources", nil, "files or directories of objects to add to the cluster's (params, Namespaces, CRDs not created yet)")
	f.BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "audit every namespace and the cluster-scoped objects (the default)")
	f.StringSliceVarP(&o.namespaces, "namespace", "n", nil, "audit only the namespaced objects of these namespaces")
	f.StringVarP(&o.selector, "selector", "l", "", "audit only the objects this label selector selects")
	f.StringSliceVar(&o.kinds, "kinds", nil, "audit only these kinds or resources (KIND[.GROUP], e.g. Deployment.apps, configmaps)")
	f.StringVar(&o.operation, "operation", "CREATE", "CREATE (each object as if re-created) or UPDATE (updated without change)")
	f.StringVar(&o.as, "as", "admin", "the user of the simulated requests (what request.userInfo and authorizer see; not impersonation of the reading client)")
	f.StringSliceVar(&o.asGroups, "as-group", []string{"system:masters", "system:authenticated"}, "the groups of the --as user")
	f.IntVar(&o.workers, "workers", 0, "objects evaluated in parallel (default GOMAXPROCS)")
	f.StringVarP(&o.output, "output", "o", "table", "table, json, junit or html")
	f.StringVar(&o.report, "report", "", "write the -o report to this file instead of stdout (the summary line goes to stderr)")
	f.StringSliceVar(&o.failOn, "fail-on", nil, "exit 1 when an object would: change, deny (denied or refused by validation), error (failed, or errors ignored by failurePolicy Ignore), validation (fail a ValidatingAdmissionPolicy validation, whatever its binding's actions)")
	f.StringVar(&o.object, "object", "", "explain one object, KIND/NAME (with -n NS for a namespaced one)")
	f.BoolVar(&o.allPods, "all-pods", false, "list every Pod, not one line per controller")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no progress on stderr (there is none unless stderr is a terminal)")
	f.Int64Var(&o.pageSize, "page-size", audit.DefaultPageSize, "objects per list request")
	f.Float32Var(&o.qps, "qps", audit.DefaultQPS, "client-side limit of requests per second to the API server")
	f.IntVar(&o.burst, "burst", audit.DefaultBurst, "client-side burst of requests")
	f.BoolVar(&o.noCompression, "disable-compression", false, "ask the API server for uncompressed pages (a cluster on this machine or a fast network: compressing costs its CPU)")
	f.StringVar(&o.memoryLimit, "memory-limit", "400Mi", "the Go runtime's soft memory limit for the audit (the collector works harder near it); GOMEMLIMIT, when set, wins. Unless GOGC or GOMEMLIMIT is set, the collector's GOGC is 200")
	f.DurationVar(&o.requestTimeout, "request-timeout", audit.DefaultRequestTimeout, "bound on each request to the API server, headers and body (a request past it is retried as a timeout is; 0: none)")
	f.DurationVar(&o.timeout, "timeout", 0, "bound on the whole audit, reading and evaluating (0: none)")
	f.IntVar(&o.maxPages, "max-pages", audit.DefaultMaxPages, "bound on the pages of one list (an API server that hands out continue tokens without end; 0: none)")
	f.StringVar(&o.maxPageBytes, "max-page-bytes", "64Mi", "bound on one page's body, decompressed: a larger page is asked again in halves, one object over it ends the audit")
	f.IntVar(&o.maxClusterObjects, "max-cluster-objects", audit.DefaultMaxClusterObjects, "bound on the objects held around the policies (Namespaces, ServiceAccounts, CRDs, params …; the audited objects are not held; 0: none)")
	o.chainFlags.add(f)
	return cmd
}

// orNone is a bound flag's value for the audit package: 0 on the command
// line means none, which the package spells as a negative value.
func orNone[T int | int64 | time.Duration](v T) T {
	if v == 0 {
		return -1
	}
	return v
}

func runAudit(cmd *cobra.Command, o *auditOptions) error {
	ctx := cmd.Context()
	stderr := cmd.ErrOrStderr()
	switch o.output {
	case "table", "json", "junit", "html":
	default:
		return badInput(fmt.Errorf("--output must be table, json, junit or html, not %q", o.output))
	}
	if o.object != "" && o.output != "table" && o.output != "json" {
		return badInput(fmt.Errorf("--object writes table or json, not %q", o.output))
	}
	if (len(o.policies) > 0) == o.clusterPolicies && !((o.clusterValidating || o.podSecurity != "") && !o.clusterPolicies) {
		return badInput(errors.New("give either --policies PATH… or --cluster-policies"))
	}
	if o.allNamespaces && len(o.namespaces) > 0 && o.object == "" {
		return badInput(errors.New("--all-namespaces and --namespace exclude each other"))
	}
	limit, err := parseMemoryLimit(o.memoryLimit)
	if err != nil {
		return badInput(err)
	}
	maxPageBytes, err := parseQuantityFlag("--max-page-bytes", o.maxPageBytes)
	if err != nil {
		return badInput(err)
	}
	if o.requestTimeout < 0 || o.timeout < 0 || o.maxPages < 0 || o.maxClusterObjects < 0 {
		return badInput(errors.New("--request-timeout, --timeout, --max-pages and --max-cluster-objects must not be negative"))
	}
	if o.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, o.timeout, fmt.Errorf("the audit ran out of its --timeout %s", o.timeout))
		defer cancel()
	}
	if os.Getenv("GOMEMLIMIT") == "" && o.client == nil {
		// Process-wide settings: only for a real run, not the tests'.
		memlimit.SetRuntime(limit)
		if os.Getenv("GOGC") == "" {
			debug.SetGCPercent(auditGCPercent)
		}
	}
	var podSecurity *audit.PodSecurityLevel
	if o.podSecurity != "" {
		if podSecurity, err = audit.ParsePodSecurity(o.podSecurity); err != nil {
			return badInput(err)
		}
	}
	failOn, err := audit.ParseFailOn(o.failOn)
	if err != nil {
		return badInput(err)
	}
	kinds, err := audit.ParseKinds(o.kinds)
	if err != nil {
		return badInput(err)
	}
	op := admission.Operation(strings.ToUpper(o.operation))
	if op != admission.Create && op != admission.Update {
		return badInput(fmt.Errorf("--operation must be CREATE or UPDATE, not %q", o.operation))
	}
	comp, err := compiler.New()
	if err != nil {
		return err
	}
	opts := audit.Options{
		ClusterPolicies: o.clusterPolicies, ClusterValidatingPolicies: o.clusterValidating, PodSecurity: podSecurity, Selector: o.selector, Kinds: kinds, Operation: op,
		User: &user.DefaultInfo{Name: o.as, Groups: o.asGroups}, Workers: o.workers, AllPods: o.allPods,
		AdmissionPlugins: o.plugins, Compiler: comp,
		Notice: func(s string) { fmt.Fprintf(stderr, "notice: %s\n", s) },
	}
	if o.object == "" {
		opts.Namespaces = o.namespaces
	}
	webhooks, err := o.webhooks.load(ctx, cmd.InOrStdin())
	if err != nil {
		return badInput(err)
	}
	if opts.ServiceURLs, err = o.webhooks.urls(); err != nil {
		return badInput(err)
	}
	opts.Webhooks = webhookclient.APIObjects(webhooks)
	opts.ValidatingWebhooks = webhookclient.ValidatingAPIObjects(webhooks)
	if len(o.policies) > 0 {
		set, err := manifest.Load(ctx, o.policies, cmd.InOrStdin())
		if err != nil {
			return badInput(err)
		}
		if err := cluster.ValidatePolicies(comp, set.Policies); err != nil {
			return badInput(err)
		}
		opts.Policies, opts.Bindings = set.APIObjects()
		opts.ValidatingPolicies, opts.ValidatingBindings = set.ValidatingAPIObjects()
		opts.Resources = set.Objects
	}
	if len(o.resources) > 0 {
		set, err := manifest.Load(ctx, o.resources, cmd.InOrStdin())
		if err != nil {
			return badInput(err)
		}
		opts.Resources = append(opts.Resources, set.Objects...)
	}
	client := o.client
	if client == nil {
		cfg, err := auditRestConfig(o.kubeconfig)
		if err != nil {
			return badInput(err)
		}
		if client, err = audit.NewClient(cfg, audit.ClientOptions{QPS: o.qps, Burst: o.burst, DisableCompression: o.noCompression, MaxPageBytes: maxPageBytes}); err != nil {
			return badInput(err)
		}
	}
	opts.Lister = &audit.Lister{Client: client, PageSize: o.pageSize, RequestTimeout: orNone(o.requestTimeout), MaxPages: orNone(o.maxPages)}
	opts.MaxClusterObjects = orNone(o.maxClusterObjects)
	if !o.quiet && o.object == "" && explain.IsTerminal(stderr) {
		opts.Progress = progressBar(stderr)
	}
	a, err := audit.New(ctx, opts)
	if err != nil {
		return badInput(fmt.Errorf("reading the cluster: %w", withCause(ctx, err)))
	}
	defer a.Close()
	if o.object != "" {
		return auditObject(ctx, cmd.OutOrStdout(), a, o)
	}
	rep, err := a.Run(ctx)
	if opts.Progress != nil {
		fmt.Fprint(stderr, "\r\033[K")
	}
	if err != nil {
		return badInput(fmt.Errorf("auditing: %w", withCause(ctx, err)))
	}
	out := cmd.OutOrStdout()
	var file *os.File
	if o.report != "" {
		if file, err = os.Create(o.report); err != nil {
			return badInput(err)
		}
		out = file
		fmt.Fprintln(stderr, rep.Headline())
	}
	switch o.output {
	case "json":
		err = rep.WriteJSON(out)
	case "junit":
		err = rep.WriteJUnit(out, failOn)
	case "html":
		err = rep.WriteHTML(out)
	default:
		err = rep.WriteTable(out)
	}
	if file != nil {
		if cerr := file.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return err
	}
	if failOn.Failed(rep) {
		return &exitError{code: exitProblem}
	}
	return nil
}

// auditObject explains one object (--object KIND/NAME).
func auditObject(ctx context.Context, w io.Writer, a *audit.Auditor, o *auditOptions) error {
	kindName, name, ok := strings.Cut(o.object, "/")
	if !ok || kindName == "" || name == "" {
		return badInput(fmt.Errorf("--object must be KIND/NAME, not %q", o.object))
	}
	kinds, err := audit.ParseKinds([]string{kindName})
	if err != nil {
		return badInput(err)
	}
	res, err := kinds[0].Resolve(a.Cluster().Table)
	if err != nil {
		return badInput(err)
	}
	if len(o.namespaces) > 1 {
		return badInput(errors.New("--object takes one --namespace"))
	}
	ns := ""
	if len(o.namespaces) == 1 {
		ns = o.namespaces[0]
	}
	obj, err := a.Get(ctx, res, ns, name)
	if err != nil {
		return badInput(fmt.Errorf("reading %s: %w", o.object, err))
	}
	rep := a.Explain(ctx, res, obj)
	if o.output == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return rep.WriteText(w)
}

// auditRestConfig is the client configuration: --kubeconfig, else the
// kubeconfig kubectl would load, else the in-cluster config.
func auditRestConfig(path string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if path != "" {
		rules.ExplicitPath = path
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("no cluster to audit: %s: %w", kubeconfigSource(path), err)
	}
	return cfg, nil
}

// kubeconfigSource says where auditRestConfig looked for the cluster.
func kubeconfigSource(path string) string {
	if path != "" {
		return fmt.Sprintf("the kubeconfig of --kubeconfig %s cannot be used", path)
	}
	if env := os.Getenv(clientcmd.RecommendedConfigPathEnvVar); env != "" {
		return fmt.Sprintf("the kubeconfig of $KUBECONFIG (%s) cannot be used, and this is not a pod in a cluster (give --kubeconfig FILE)", env)
	}
	return fmt.Sprintf("no usable kubeconfig at %s ($KUBECONFIG is not set) and this is not a pod in a cluster (give --kubeconfig FILE or set KUBECONFIG)", clientcmd.RecommendedHomeFile)
}

// withCause is err with the cause of ctx's end when the audit's --timeout
// ended it.
func withCause(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); cause != nil && ctx.Err() == context.DeadlineExceeded && cause != context.DeadlineExceeded {
		return fmt.Errorf("%w (%v)", cause, err)
	}
	return err
}

// progressBar draws the audit's progress on one terminal line.
func progressBar(w io.Writer) func(audit.Progress) {
	return func(p audit.Progress) {
		rate := 0.0
		if s := p.Elapsed.Seconds(); s > 0 {
			rate = float64(p.Evaluated) / s
		}
		eta := ""
		if p.Remaining > 0 && rate > 0 {
			left := float64(p.Remaining+p.Listed-p.Evaluated) / rate
			eta = fmt.Sprintf(", %s left of %s", (time.Duration(left) * time.Second).Round(time.Second), p.Resource)
		}
		fmt.Fprintf(w, "\r\033[Klisted %d, evaluated %d (%.0f/s)%s", p.Listed, p.Evaluated, rate, eta)
	}
}
