package main

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"

	"github.com/mutatis-dev/mutatis/cluster"
	"github.com/mutatis-dev/mutatis/explain"
	"github.com/mutatis-dev/mutatis/scheme/admissionplugins"
	"github.com/mutatis-dev/mutatis/webhook/certs"
	"github.com/mutatis-dev/mutatis/webhookclient"
)

type reviewOptions struct {
	server, ca, cert, key string
	object, oldObject     string
	operation, subresrc   string
	namespace             string
	user                  userFlags
	dryRun                bool
	version               string
	timeout               time.Duration
}

func newReviewCommand() *cobra.Command {
	o := &reviewOptions{}
	cmd := &cobra.Command{
		Use:   "review -f OBJECT [--server URL] [--ca FILE] [flags]",
		Short: "Send an AdmissionReview for an object to a webhook and print the patch",
		Long: `review builds the AdmissionReview kube-apiserver would send for an object
(resource, namespace, operation and user resolved as 'mutatis apply' does;
built-in kinds are sent in their canonical JSON, as kube-apiserver encodes
them), sends it to a running 'mutatis serve' (or any mutating webhook), and
prints the JSON patch of the answer on stdout; warnings and audit annotations
go to stderr.

Exit status: 0 admitted, 1 denied or a failed call (stderr: the Status
message), 2 bad input.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runReview(cmd, o) },
	}
	f := cmd.Flags()
	f.StringVarP(&o.object, "filename", "f", "", "the object under admission (file, or - for stdin)")
	f.StringVar(&o.server, "server", "https://127.0.0.1:8443/mutate", "the webhook's URL")
	f.StringVar(&o.ca, "ca", ".run/certs/"+certs.CACertFile, "the CA that signed the webhook's certificate (empty: system roots)")
	f.StringVar(&o.cert, "cert", "", "a client certificate to present (PEM)")
	f.StringVar(&o.key, "key", "", "the key of --cert (PEM)")
	f.StringVar(&o.oldObject, "old-object", "", "the old object (makes the operation UPDATE by default)")
	f.StringVar(&o.operation, "operation", "", "CREATE, UPDATE, DELETE or CONNECT (default CREATE, or UPDATE with --old-object)")
	f.StringVar(&o.subresrc, "subresource", "", "the subresource of the request")
	f.StringVarP(&o.namespace, "namespace", "n", "", "the namespace of the request (default: the object's, or default)")
	o.user.add(f)
	f.BoolVar(&o.dryRun, "dry-run", false, "mark the request as a dry run")
	f.StringVar(&o.version, "review-version", "v1", "the AdmissionReview version to send: v1 or v1beta1")
	f.DurationVar(&o.timeout, "timeout", 10*time.Second, "the webhook timeout (sent as ?timeout=, as kube-apiserver does)")
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

// reviewAdmissionPlugins are the admission plugins before MAP of the
// request review sends: kube-apiserver's default ones but ServiceAccount,
// which needs the cluster's ServiceAccounts.
var reviewAdmissionPlugins = admissionplugins.Flags{Disable: []string{"ServiceAccount"}}

func runReview(cmd *cobra.Command, o *reviewOptions) error {
	ctx := cmd.Context()
	if o.version != "v1" && o.version != "v1beta1" {
		return badInput(fmt.Errorf("--review-version must be v1 or v1beta1, not %q", o.version))
	}
	if (o.cert == "") != (o.key == "") {
		return badInput(errors.New("--cert and --key go together"))
	}
	object, oldObject, err := readObjects(ctx, o.object, o.oldObject, cmd.InOrStdin())
	if err != nil {
		return badInput(err)
	}
	// review has no cluster objects: the ServiceAccount admission plugin
	// would refuse every Pod that names a ServiceAccount.
	sim, err := cluster.New(nil, cluster.Options{AdmissionPlugins: reviewAdmissionPlugins})
	if err != nil {
		return err
	}
	op := admission.Operation(strings.ToUpper(o.operation))
	req := cluster.Request{
		Object: object, OldObject: oldObject, Operation: op, Subresource: o.subresrc,
		Namespace: o.namespace, DryRun: o.dryRun,
		User: o.user.info(),
	}
	if op == admission.Delete {
		req.Object, req.OldObject = nil, object
	}
	attrs, err := sim.Attributes(req)
	if err != nil {
		return badInput(fmt.Errorf("%s: %w", o.object, err))
	}
	body, err := webhookclient.ReviewBody(sim.Scheme, attrs, o.version)
	if err != nil {
		return badInput(err)
	}

	client, err := o.client()
	if err != nil {
		return badInput(err)
	}
	target, err := url.Parse(o.server)
	if err != nil {
		return badInput(fmt.Errorf("--server: %w", err))
	}
	if target.Path == "" || target.Path == "/" {
		target.Path = "/mutate"
	}
	q := target.Query()
	q.Set("timeout", o.timeout.String())
	target.RawQuery = q.Encode()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, target.String(), bytes.NewReader(body))
	if err != nil {
		return badInput(err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(hreq)
	if err != nil {
		return &exitError{code: exitProblem, err: err}
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return &exitError{code: exitProblem, err: err}
	}
	if resp.StatusCode != http.StatusOK {
		var st metav1.Status
		msg := strings.TrimSpace(string(out))
		if json.Unmarshal(out, &st) == nil && st.Message != "" {
			msg = st.Message
		}
		return &exitError{code: exitProblem, err: fmt.Errorf("HTTP %d: %s", resp.StatusCode, msg)}
	}
	var rv admissionv1.AdmissionReview // v1beta1 answers have the same fields
	if err := json.Unmarshal(out, &rv); err != nil || rv.Response == nil {
		return &exitError{code: exitProblem, err: fmt.Errorf("the answer is no AdmissionReview response: %s", out)}
	}
	return printReview(cmd, rv.Response)
}

func (o *reviewOptions) client() (*http.Client, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.ca != "" {
		pool, err := certs.LoadPool(o.ca)
		if err != nil {
			return nil, fmt.Errorf("--ca: %w (is 'mutatis serve --self-signed-dir' running?)", err)
		}
		cfg.RootCAs = pool
	}
	if o.cert != "" {
		pair, err := tls.LoadX509KeyPair(o.cert, o.key)
		if err != nil {
			return nil, fmt.Errorf("--cert/--key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return &http.Client{Timeout: o.timeout + 5*time.Second, Transport: &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: true}}, nil
}

// printReview prints the patch (stdout) and the rest (stderr).
func printReview(cmd *cobra.Command, r *admissionv1.AdmissionResponse) error {
	stderr := cmd.ErrOrStderr()
	// The warnings as kube-apiserver would return them (each once, none
	// with a control character, truncated past 4 KiB in all).
	for _, w := range explain.Returned(r.Warnings)[0] {
		fmt.Fprintf(stderr, "warning: %s\n", w)
	}
	keys := make([]string, 0, len(r.AuditAnnotations))
	for k := range r.AuditAnnotations {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(stderr, "audit annotation: %s=%s\n", explain.Printable(k), explain.Printable(r.AuditAnnotations[k]))
	}
	if !r.Allowed {
		msg := "denied"
		if r.Result != nil {
			msg = fmt.Sprintf("denied (%d %s): %s", r.Result.Code, r.Result.Reason, r.Result.Message)
		}
		return &exitError{code: exitProblem, err: errors.New(msg)}
	}
	patch := r.Patch
	if len(patch) == 0 {
		patch = []byte("[]")
	}
	_, err := fmt.Fprintln(cmd.OutOrStdout(), string(patch))
	return err
}
