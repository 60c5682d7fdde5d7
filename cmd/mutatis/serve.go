package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/mutatis-dev/mutatis/controller"
	"github.com/mutatis-dev/mutatis/engine"
	"github.com/mutatis-dev/mutatis/internal/buildinfo"
	"github.com/mutatis-dev/mutatis/internal/memlimit"
	"github.com/mutatis-dev/mutatis/source"
	"github.com/mutatis-dev/mutatis/webhook"
	"github.com/mutatis-dev/mutatis/webhook/certs"
)

// Policy sources of informer mode.
const (
	sourceNative = "native"
	sourceShadow = "shadow"
)

type serveOptions struct {
	policies, resources []string
	logFormat           string
	kubeconfig          string
	source              string
	listen              string
	tlsCertFile         string
	tlsKeyFile          string
	selfSignedDir       string
	clientCAFile        string
	maxRequestBytes     int64
	explainDryRun       bool
	shutdownTimeout     time.Duration
	shutdownDrain       time.Duration
	reloadInterval      time.Duration
	bodyReadTimeout     time.Duration
	maxBodyBytes        int64
	maxVariableBytes    int64
	memoryLimit         string
	cpuProfile          string
	memoryLimitBytes    int64 // memoryLimit parsed
	// cgroupRoot is where the container's memory limit is read; tests
	// change it, and setMemoryLimit, which is memlimit.SetRuntime.
	cgroupRoot     string
	setMemoryLimit func(int64)
	// setGCPercent is memlimit.SetGCPercent (GOGC from the soft limit and
	// the live heap: memlimit.GCTuner); tests change it.
	setGCPercent func(int) int

	// Informer mode: the controller's settings.
	nativePluginDisabled  bool
	namespace             string
	webhookName           string
	webhookURL            string
	webhookService        string
	webhookCAFile         string
	webhookTimeout        int32
	excludeSystemNS       bool
	maxInFlight           int
	selfSignedCertSecret  string
	leaderElect           bool
	leaderElectLeaseName  string
	leaderElectIdentity   string
	writeTimeout          time.Duration
	caBundle              []byte // the CA of the serving certificate, when known
	selfSignedCertificate *tls.Certificate
}

// defaultShutdownDrain is --shutdown-drain's default: enough for the
// endpoints controller and kube-proxy to take the pod out of the Service
// once /readyz fails, so that new connections go to other replicas.
const defaultShutdownDrain = 5 * time.Second

// policySource is where the policies served come from: the files of
// static mode (--policies, --resources), or in informer mode a controller
// that keeps its Engine current and, with --webhook-url or
// --webhook-service, the webhook configurations.
func (o *serveOptions) policySource(static bool, metrics engine.Metrics, log *slog.Logger) (source.Source, error) {
	if static {
		return source.NewFiles(source.Options{Policies: o.policies, Resources: o.resources, Metrics: metrics}, o.reloadInterval, log)
	}
	cfg, err := o.restConfig()
	if err != nil {
		return nil, badInput(err)
	}
	wh := o.webhookOptions()
	if (wh.URL != "" || wh.Service != nil) && len(wh.CABundle) == 0 {
		return nil, errors.New("managing webhook configurations needs the CA of the serving certificate: --webhook-ca-file, or a certificate from --self-signed-dir or --self-signed-cert-secret")
	}
	ctl, err := controller.New(controller.Config{
		RestConfig: cfg, Source: o.source, AcknowledgeBuiltinPluginDisabled: o.nativePluginDisabled,
		Metrics: metrics, Namespace: o.namespace, Webhook: wh,
		LeaderElection: o.leaderElection(), WriteTimeout: o.writeTimeout,
	})
	if err != nil {
		return nil, err
	}
	return ctl, nil
}

// webhookOptions are the webhook configurations the flags ask the
// controller to keep current.
func (o *serveOptions) webhookOptions() controller.WebhookOptions {
	wh := controller.WebhookOptions{Name: o.webhookName, URL: o.webhookURL, CABundle: o.caBundle, TimeoutSeconds: o.webhookTimeout}
	if o.excludeSystemNS {
		wh.ExcludeNamespaces = controller.SystemNamespaces
	}
	if o.webhookService != "" {
		path := webhook.PathMutate
		wh.Service = &admissionregistrationv1.ServiceReference{Namespace: o.namespace, Name: o.webhookService, Path: &path}
	}
	return wh
}

// leaderElection is the controller's leader election of the flags: with
// several replicas, only the holder of the Lease writes to the cluster.
func (o *serveOptions) leaderElection() controller.LeaderElectionOptions {
	return controller.LeaderElectionOptions{Enabled: o.leaderElect, LeaseName: o.leaderElectLeaseName, Identity: o.leaderElectIdentity}
}

// loadSecretCertificate serves with the certificate of
// --self-signed-cert-secret (made first when the Secret is empty).
func (o *serveOptions) loadSecretCertificate(ctx context.Context) error {
	if o.webhookService == "" {
		return badInput(errors.New("--self-signed-cert-secret needs --webhook-service (the certificate is made for its DNS name)"))
	}
	cfg, err := o.restConfig()
	if err != nil {
		return badInput(err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	host := o.webhookService + "." + o.namespace + ".svc"
	cert, err := controller.EnsureSelfSignedCertificate(ctx, kube, o.namespace, o.selfSignedCertSecret, []string{host, host + ".cluster.local"})
	if err != nil {
		return err
	}
	kp, err := tls.X509KeyPair(cert.CertPEM, cert.KeyPEM)
	if err != nil {
		return fmt.Errorf("--self-signed-cert-secret: %w", err)
	}
	o.selfSignedCertificate = &kp
	if o.caBundle == nil {
		o.caBundle = cert.CABundle
	}
	return nil
}

func defaultNamespace() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	return "mutatis-system"
}

func newServeCommand() *cobra.Command {
	o := &serveOptions{cgroupRoot: "/sys/fs/cgroup", setMemoryLimit: memlimit.SetRuntime, setGCPercent: memlimit.SetGCPercent}
	cmd := &cobra.Command{
		Use:   "serve [--policies PATH…] [--resources PATH…] [--kubeconfig FILE] --listen ADDR [TLS flags]",
		Short: "Serve MutatingAdmissionPolicies as a mutating admission webhook",
		Long: `serve runs the HTTPS admission webhook: /mutate answers AdmissionReviews
(admission.k8s.io/v1 and v1beta1) with the decision and JSON patch kube-apiserver
1.37's MutatingAdmissionPolicy plugin would produce; /healthz, /readyz and
/metrics (Prometheus) serve operations.

Static mode (--policies, --resources): the policies, bindings and the objects
around them (Namespaces, params, CRDs, RBAC) come from files, which are read
again when they change (--reload-interval). Informer mode (--kubeconfig or the
in-cluster config) follows a cluster.

TLS: --tls-cert-file and --tls-key-file (read again when they change), or
--self-signed-dir DIR, which makes (or reuses) a CA and a certificate for
localhost and 127.0.0.1 in DIR. --client-ca-file makes /mutate require a
client certificate signed by that CA (kube-apiserver's).

See docs/webhook.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runServe(cmd, o) },
	}
	f := cmd.Flags()
	f.StringSliceVar(&o.policies, "policies", nil, "static mode: files or directories of MutatingAdmissionPolicies and bindings")
	f.StringSliceVar(&o.resources, "resources", nil, "static mode: files or directories of other cluster objects: Namespaces, params, CRDs, RBAC")
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "informer mode: the kubeconfig of the cluster (default: the in-cluster config)")
	f.StringVar(&o.source, "source", sourceNative, "informer mode: where policies come from: native or shadow")
	f.StringVar(&o.listen, "listen", ":8443", "the address to serve HTTPS on")
	f.StringVar(&o.logFormat, "log-format", "text", "the format of the log on stderr: text or json (log/slog); kube-apiserver client and controller logs go through it too")
	f.StringVar(&o.tlsCertFile, "tls-cert-file", "", "the serving certificate (PEM), read again when it changes")
	f.StringVar(&o.tlsKeyFile, "tls-key-file", "", "the key of --tls-cert-file (PEM)")
	f.StringVar(&o.selfSignedDir, "self-signed-dir", "", "make or reuse a CA and a serving certificate for localhost in this directory")
	f.StringVar(&o.clientCAFile, "client-ca-file", "", "require a client certificate signed by this CA on /mutate")
	f.Int64Var(&o.maxRequestBytes, "max-request-bytes", webhook.DefaultMaxRequestBytes, "the largest AdmissionReview body accepted")
	f.IntVar(&o.maxInFlight, "max-in-flight", webhook.DefaultMaxInFlight, "reviews evaluated at once; more get HTTP 429 at once (0: no bound)")
	f.BoolVar(&o.explainDryRun, "explain-dry-run", false, "summarize the evaluation trace of dry-run requests in warnings")
	f.DurationVar(&o.shutdownTimeout, "shutdown-timeout", webhook.DefaultShutdownTimeout, "how long a shutdown waits for in-flight reviews")
	f.DurationVar(&o.shutdownDrain, "shutdown-drain", defaultShutdownDrain, "how long a shutdown drains before it stops accepting connections: /readyz fails, HTTP/1.1 answers close their connection (0: no drain)")
	f.DurationVar(&o.bodyReadTimeout, "body-read-timeout", webhook.DefaultBodyReadTimeout, "the longest a review's body may take to arrive after its headers; a slower one gets HTTP 408")
	f.Int64Var(&o.maxBodyBytes, "max-body-bytes-in-flight", 0, "the bytes of reviews held at once (the buffers of bodies being read, the estimated memory of a review being evaluated, from the shape of its JSON); one that does not fit gets HTTP 429, one larger than the whole budget HTTP 413 (0: a quarter of the container's memory limit, at least 48 x --max-request-bytes)")
	f.Int64Var(&o.maxVariableBytes, "max-variable-bytes", webhook.DefaultMaxVariableBytes, "the bytes the variables' values of one policy's evaluation may hold (strings, bytes, and those in lists and maps), and, apart, the bytes of the strings and bytes its function calls build; a variable or expression past it fails to evaluate and the policy's failurePolicy applies (kube-apiserver has no such bound; negative: none)")
	f.StringVar(&o.memoryLimit, "memory-limit", "", "the container's memory limit (bytes or a quantity like 512Mi); the Go runtime's soft limit is set to 90% of it unless GOMEMLIMIT is set (default: the cgroup's limit, when there is one)")
	f.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file (runtime/pprof), closed at shutdown")
	f.DurationVar(&o.reloadInterval, "reload-interval", 2*time.Second, "static mode: how often to look for changed files (0: never)")
	f.BoolVar(&o.nativePluginDisabled, "native-plugin-disabled", false, "informer mode, --source native: acknowledge that kube-apiserver's own MutatingAdmissionPolicy plugin is disabled (otherwise every policy would mutate twice)")
	f.StringVar(&o.namespace, "namespace", defaultNamespace(), "informer mode: the namespace mutatis runs in; its webhooks never see requests in it (default $POD_NAMESPACE, else mutatis-system)")
	f.StringVar(&o.webhookName, "webhook-name", "mutatis", "informer mode: base name of the MutatingWebhookConfigurations mutatis keeps current (NAME-fail, NAME-ignore)")
	f.StringVar(&o.webhookURL, "webhook-url", "", "informer mode: manage webhook configurations that call this URL (out of cluster, e.g. https://127.0.0.1:8443/mutate)")
	f.StringVar(&o.webhookService, "webhook-service", "", "informer mode: manage webhook configurations that call this Service of --namespace on port 443, path /mutate")
	f.StringVar(&o.webhookCAFile, "webhook-ca-file", "", "the CA bundle of the webhook configurations (default: the CA of --self-signed-dir or --self-signed-cert-secret, or ca.crt next to --tls-cert-file)")
	f.Int32Var(&o.webhookTimeout, "webhook-timeout-seconds", 10, "informer mode: timeoutSeconds of the webhook configurations (1-30)")
	f.BoolVar(&o.excludeSystemNS, "exclude-system-namespaces", false, "informer mode: the webhook configurations also exclude kube-system and kube-node-lease, so that an unavailable mutatis never blocks system pods and node leases (policies then do not apply there: the one difference to native MAP)")
	f.StringVar(&o.selfSignedCertSecret, "self-signed-cert-secret", "", "informer mode: serve with the certificate in this Secret of --namespace, filling it with a self-signed one for the --webhook-service name first if it is empty")
	f.BoolVar(&o.leaderElect, "leader-elect", true, "informer mode: only the replica holding a Lease in --namespace writes the webhook configurations, status conditions and Events; every replica serves")
	f.StringVar(&o.leaderElectLeaseName, "leader-elect-lease-name", "", "informer mode: the name of the leader election Lease (default: --webhook-name)")
	f.DurationVar(&o.writeTimeout, "write-timeout", controller.DefaultWriteTimeout, "informer mode: the longest one cluster write of a policy sync (webhook configurations, status conditions) may take; a write the API server never answers then fails the sync, which is retried, instead of holding later policy sets and readiness back")
	f.StringVar(&o.leaderElectIdentity, "leader-elect-identity", os.Getenv("POD_NAME"), "informer mode: this replica's name in the Lease, unique among the replicas (default $POD_NAME, else the hostname and a random suffix)")
	return cmd
}

// newLogger is serve's one logger, writing to w in format text or json
// (log/slog's handlers).
func newLogger(w io.Writer, format string) (*slog.Logger, error) {
	opts := &slog.HandlerOptions{Level: slog.LevelInfo}
	switch format {
	case "text", "":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format must be text or json, not %q", format)
}

func runServe(cmd *cobra.Command, o *serveOptions) error {
	stderr := cmd.ErrOrStderr()
	log, err := newLogger(stderr, o.logFormat)
	if err != nil {
		return badInput(err)
	}
	build := buildinfo.Read()
	log.Info("mutatis", "version", build.Version, "commit", build.Commit, "built", build.Date,
		"go", build.GoVersion, "platform", build.Platform, "kubernetes", build.Kubernetes)
	static, err := o.validate(cmd)
	if err != nil {
		return badInput(err)
	}
	if o.cpuProfile != "" {
		stopProfile, err := startCPUProfile(o.cpuProfile)
		if err != nil {
			return badInput(err)
		}
		defer stopProfile()
	}
	soft := o.memoryLimitFinder().Apply(log, o.setMemoryLimit)
	// Kubernetes stops pods with SIGTERM; main handles only interrupts.
	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM)
	defer stop()
	if soft > 0 && o.setGCPercent != nil {
		// Under the soft limit the collector may run less often: GOGC from
		// the limit and the live heap, followed as the heap grows.
		tuner := &memlimit.GCTuner{Soft: soft, Live: memlimit.LiveHeap, Set: o.setGCPercent, Log: log}
		go tuner.Run(ctx, gcTuneInterval)
	}
	// One logger: the controller logs through the context's klog logger,
	// client-go's informers and leader election through klog's global one.
	ctx = klog.NewContext(ctx, logr.FromSlogHandler(log.Handler()))
	klog.SetSlogLogger(log)

	if o.webhookCAFile != "" {
		if o.caBundle, err = os.ReadFile(o.webhookCAFile); err != nil {
			return badInput(fmt.Errorf("--webhook-ca-file: %w", err))
		}
	}
	if o.selfSignedCertSecret != "" {
		if err := o.loadSecretCertificate(ctx); err != nil {
			return err
		}
	}
	getCertificate, err := o.certificate(stderr, log)
	if err != nil {
		return badInput(err)
	}
	opts := webhook.Options{
		GetCertificate:       getCertificate,
		MaxRequestBytes:      o.maxRequestBytes,
		MaxInFlight:          o.maxInFlight,
		ExplainDryRun:        o.explainDryRun,
		ShutdownTimeout:      o.shutdownTimeout,
		DrainPeriod:          o.shutdownDrain,
		BodyReadTimeout:      o.bodyReadTimeout,
		MaxBodyBytesInFlight: o.bodyBudget(),
		MaxVariableBytes:     o.maxVariableBytes,
		Metrics:              webhook.NewMetrics(),
		Log:                  log,
	}
	opts.Metrics.Registry().MustRegister(buildInfoGauge(build))
	log.Info("review limits", "max-request-bytes", o.maxRequestBytes, "max-body-bytes-in-flight", opts.MaxBodyBytesInFlight,
		"max-in-flight", o.maxInFlight, "body-read-timeout", o.bodyReadTimeout.String())
	if o.clientCAFile != "" {
		if opts.ClientCAs, err = certs.LoadPool(o.clientCAFile); err != nil {
			return badInput(fmt.Errorf("--client-ca-file: %w", err))
		}
	}

	// The policy source fills the engine and says when it is ready. Until
	// then /mutate answers 503.
	src, err := o.policySource(static, opts.Metrics, log)
	if err != nil {
		return err
	}
	if err := src.LoadInitial(ctx); err != nil {
		return badInput(err)
	}
	opts.Admitter = src.Engine()
	opts.Ready = func() error {
		if !src.Ready() {
			return errors.New("waiting for the policy informers to sync")
		}
		return nil
	}
	if ctl, ok := src.(*controller.Controller); ok {
		// /statusz: the generation and the resourceVersions of the
		// policies and bindings in the Engine (controller.Status).
		opts.Status = func() any {
			if !ctl.Ready() {
				return nil
			}
			return ctl.Status()
		}
		// ctx is passed, not captured: runServe derives a new ctx below.
		go func(ctx context.Context) {
			select {
			case <-ctl.ReadyCh():
				log.Info("policy informers synced; ready")
			case <-ctx.Done():
			}
		}(ctx)
	}

	srv, err := webhook.NewServer(opts)
	if err != nil {
		return err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", o.listen)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "mutatis serve: listening on https://%s (%s, %s, %s, %s%s)\n", ln.Addr(), webhook.PathMutate, webhook.PathHealthz, webhook.PathReadyz, webhook.PathMetrics, statuszNote(opts))

	// The sources and the server stop together: a failing source stops
	// the server (gracefully), a stopped server stops the sources.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sourceErr := make(chan error, 1)
	go func() {
		err := src.Run(ctx)
		if err != nil && ctx.Err() == nil {
			log.Error("policy source failed; shutting down", "error", err)
		}
		cancel()
		sourceErr <- err
	}()
	err = srv.Serve(ctx, ln)
	cancel()
	if serr := <-sourceErr; err == nil && serr != nil && !errors.Is(serr, context.Canceled) {
		err = serr
	}
	return err
}

// gcTuneInterval is how often serve follows the live heap with GOGC
// (memlimit.GCTuner).
const gcTuneInterval = 10 * time.Second

// validate checks the flags and tells whether serve runs in static mode.
func (o *serveOptions) validate(cmd *cobra.Command) (static bool, err error) {
	static = len(o.policies) > 0
	switch {
	case len(o.resources) > 0 && !static:
		return false, errors.New("--resources needs --policies (static mode)")
	case static && o.kubeconfig != "":
		return false, errors.New("--policies (static mode) and --kubeconfig (informer mode) exclude each other")
	case static && cmd.Flags().Changed("source"):
		return false, errors.New("--source applies to informer mode (--kubeconfig or in-cluster), not to --policies")
	case o.source != sourceNative && o.source != sourceShadow:
		return false, fmt.Errorf("--source must be native or shadow, not %q", o.source)
	case (o.tlsCertFile == "") != (o.tlsKeyFile == ""):
		return false, errors.New("--tls-cert-file and --tls-key-file go together")
	case o.tlsCertFile != "" && o.selfSignedDir != "":
		return false, errors.New("--tls-cert-file/--tls-key-file and --self-signed-dir exclude each other")
	case o.selfSignedCertSecret != "" && (static || o.tlsCertFile != "" || o.selfSignedDir != ""):
		return false, errors.New("--self-signed-cert-secret is a certificate source of informer mode; it excludes --policies, --tls-cert-file and --self-signed-dir")
	case o.tlsCertFile == "" && o.selfSignedDir == "" && o.selfSignedCertSecret == "":
		return false, errors.New("serving needs a certificate: --tls-cert-file and --tls-key-file, --self-signed-dir DIR, or --self-signed-cert-secret NAME")
	case !static && o.source == sourceNative && !o.nativePluginDisabled:
		return false, controller.ErrBuiltinPluginEnabled
	case o.webhookURL != "" && o.webhookService != "":
		return false, errors.New("--webhook-url and --webhook-service exclude each other")
	case static && (o.webhookURL != "" || o.webhookService != ""):
		return false, errors.New("--webhook-url and --webhook-service apply to informer mode")
	case static && (cmd.Flags().Changed("leader-elect") || cmd.Flags().Changed("leader-elect-lease-name") || cmd.Flags().Changed("leader-elect-identity")):
		return false, errors.New("--leader-elect, --leader-elect-lease-name and --leader-elect-identity apply to informer mode")
	case static && cmd.Flags().Changed("write-timeout"):
		return false, errors.New("--write-timeout applies to informer mode")
	case o.writeTimeout <= 0:
		return false, errors.New("--write-timeout must be positive")
	case o.maxRequestBytes <= 0:
		return false, errors.New("--max-request-bytes must be positive")
	case o.maxInFlight < 0:
		return false, errors.New("--max-in-flight must not be negative")
	case o.shutdownTimeout <= 0:
		return false, errors.New("--shutdown-timeout must be positive")
	case o.shutdownDrain < 0:
		return false, errors.New("--shutdown-drain must not be negative")
	case o.bodyReadTimeout <= 0:
		return false, errors.New("--body-read-timeout must be positive")
	case o.maxBodyBytes < 0:
		return false, errors.New("--max-body-bytes-in-flight must not be negative")
	case o.maxBodyBytes > 0 && o.maxBodyBytes < o.maxRequestBytes:
		return false, errors.New("--max-body-bytes-in-flight must hold at least one body of --max-request-bytes (16 for a review of that size to be evaluated)")
	case static && cmd.Flags().Changed("exclude-system-namespaces"):
		return false, errors.New("--exclude-system-namespaces applies to informer mode (it shapes the webhook configurations mutatis manages)")
	case o.reloadInterval < 0:
		return false, errors.New("--reload-interval must not be negative")
	case slices.Contains(o.policies, "-") || slices.Contains(o.resources, "-"):
		return false, errors.New("serve reads files, not stdin (-)")
	}
	if o.memoryLimit != "" {
		if o.memoryLimitBytes, err = parseMemoryLimit(o.memoryLimit); err != nil {
			return false, err
		}
	}
	return static, nil
}

// certificate returns the GetCertificate of the serving key pair.
func (o *serveOptions) certificate(stderr io.Writer, log *slog.Logger) (func(*tls.ClientHelloInfo) (*tls.Certificate, error), error) {
	if o.selfSignedCertificate != nil {
		c := o.selfSignedCertificate
		return func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return c, nil }, nil
	}
	certFile, keyFile := o.tlsCertFile, o.tlsKeyFile
	if certFile != "" && o.caBundle == nil {
		// A kubernetes.io/tls Secret made by cert-manager holds ca.crt too.
		if ca, err := os.ReadFile(filepath.Join(filepath.Dir(certFile), "ca.crt")); err == nil {
			o.caBundle = ca
		}
	}
	if o.selfSignedDir != "" {
		hosts := certs.DefaultHosts()
		if host, _, err := net.SplitHostPort(o.listen); err == nil && host != "" && !slices.Contains(hosts, host) {
			if ip := net.ParseIP(host); ip == nil || !ip.IsUnspecified() {
				hosts = append(hosts, host)
			}
		}
		out, err := certs.Ensure(o.selfSignedDir, certs.Options{Hosts: hosts})
		if err != nil {
			return nil, fmt.Errorf("--self-signed-dir: %w", err)
		}
		state := "reusing"
		if out.NewCA {
			state = "new"
		}
		fmt.Fprintf(stderr, "mutatis serve: CA certificate (%s): %s\n", state, out.Paths.CACert)
		if ca, err := os.ReadFile(out.Paths.CACert); err == nil {
			o.caBundle = ca
		}
		certFile, keyFile = out.Paths.Cert, out.Paths.Key
	}
	kp, err := webhook.NewKeypair(certFile, keyFile, log)
	if err != nil {
		return nil, err
	}
	return kp.GetCertificate, nil
}

// restConfig is the client configuration of informer mode.
func (o *serveOptions) restConfig() (*rest.Config, error) {
	if o.kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("--kubeconfig: %w", err)
		}
		return cfg, nil
	}
	cfg, err := rest.InClusterConfig()
	if errors.Is(err, rest.ErrNotInCluster) {
		return nil, errors.New("nothing to serve: give --policies (static mode), or --kubeconfig or run in a cluster (informer mode)")
	}
	return cfg, err
}

// statuszNote lists /statusz among the endpoints when it is served.
func statuszNote(o webhook.Options) string {
	if o.Status == nil {
		return ""
	}
	return ", " + webhook.PathStatusz
}

// startCPUProfile starts --cpuprofile's CPU profile into file; the function
// it returns stops it and closes the file.
func startCPUProfile(file string) (func(), error) {
	f, err := os.Create(file)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}, nil
}
