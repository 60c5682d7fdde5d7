package load

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"

	"github.com/mutatis-dev/mutatis/source"
	"github.com/mutatis-dev/mutatis/webhook"
	"github.com/mutatis-dev/mutatis/webhook/certs"
)

// ServerOptions configure an in-process webhook.
type ServerOptions struct {
	// Policies and Resources are the manifest paths of
	// `mutatis serve --policies … --resources …` (static mode).
	Policies, Resources []string
	// CertDir holds the CA and serving certificate, made or reused as
	// with `--self-signed-dir` (required).
	CertDir string
	// Listen is the address (default 127.0.0.1:0, a free loopback port).
	Listen string
	// Log receives the server's events; nil discards them.
	Log *slog.Logger
}

// Server is a webhook serving in this process.
type Server struct {
	// URL is the /mutate endpoint, https://127.0.0.1:PORT/mutate.
	URL string
	// Roots trust the serving certificate (the CA of CertDir).
	Roots *x509.CertPool
	// CAFile is the CA certificate's path.
	CAFile string
	// Summary says what was loaded ("20 policies, 20 bindings, …").
	Summary string

	cancel context.CancelFunc
	done   chan error
}

// StartServer serves o.Policies as `mutatis serve --policies …
// --self-signed-dir …` does in static mode: the same loading
// (source.Load: create-time validation, simulated cluster of the
// files' other objects), the same engine, metrics and webhook.Server with
// its defaults (body limit, timeouts, TLS with HTTP/2). It does not watch
// the files for changes. It returns once the port is open; Close stops it.
func StartServer(ctx context.Context, o ServerOptions) (*Server, error) {
	if o.CertDir == "" {
		return nil, errors.New("load: ServerOptions.CertDir is required")
	}
	if o.Listen == "" {
		o.Listen = "127.0.0.1:0"
	}
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	out, err := certs.Ensure(o.CertDir, certs.Options{Hosts: certs.DefaultHosts()})
	if err != nil {
		return nil, fmt.Errorf("load: certificates: %w", err)
	}
	roots, err := certs.LoadPool(out.Paths.CACert)
	if err != nil {
		return nil, err
	}
	kp, err := webhook.NewKeypair(out.Paths.Cert, out.Paths.Key, log)
	if err != nil {
		return nil, err
	}
	srv, summary, err := newServer(ctx, o, log, kp.GetCertificate)
	if err != nil {
		return nil, err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", o.Listen)
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s := &Server{
		URL: "https://" + ln.Addr().String() + webhook.PathMutate, Roots: roots, CAFile: out.Paths.CACert,
		Summary: summary, cancel: cancel, done: make(chan error, 1),
	}
	go func() { s.done <- srv.Serve(sctx, ln) }()
	return s, nil
}

// newServer loads o.Policies and o.Resources and builds the webhook server
// StartServer serves (and BenchmarkHandler calls without a network).
func newServer(ctx context.Context, o ServerOptions, log *slog.Logger, getCert func(*tls.ClientHelloInfo) (*tls.Certificate, error)) (*webhook.Server, string, error) {
	metrics := webhook.NewMetrics()
	st, err := source.Load(ctx, source.Options{
		Policies: o.Policies, Resources: o.Resources, Metrics: metrics,
		OnSynthesize: func(name string) {
			log.Info("namespace not in --resources: using one with only the kubernetes.io/metadata.name label", "namespace", name)
		},
	})
	if err != nil {
		return nil, "", err
	}
	srv, err := webhook.NewServer(webhook.Options{
		Admitter:        st.Engine(),
		Ready:           func() error { return nil },
		GetCertificate:  getCert,
		MaxRequestBytes: webhook.DefaultMaxRequestBytes,
		ShutdownTimeout: webhook.DefaultShutdownTimeout,
		Metrics:         metrics,
		Log:             log,
	})
	return srv, st.Summary, err
}

// Close shuts the server down gracefully and returns Serve's error.
func (s *Server) Close() error {
	s.cancel()
	return <-s.done
}
