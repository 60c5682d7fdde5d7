//go:build linux

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
)

// The polyfill and churn scenarios run `mutatis serve` in informer mode as
// the mutating webhook of a kube-apiserver whose MutatingAdmissionPolicy
// plugin is disabled:
//
//	mutatis serve --kubeconfig K --source shadow|native --listen 127.0.0.1:PORT \
//	  --self-signed-dir DIR --webhook-url https://127.0.0.1:PORT/mutate
//
// The binary is built with the race detector (MUTATIS_E2E_RACE=0 builds it
// without) and a data race reported in its log fails the test.

var (
	serveOnce sync.Once
	serveBin  string
	serveErr  error
)

// TestMain removes the binary buildServe built (≈ 200 MB with the race
// detector) once every test has run.
func TestMain(m *testing.M) {
	code := m.Run()
	if serveBin != "" {
		_ = os.RemoveAll(filepath.Dir(serveBin))
	}
	os.Exit(code)
}

// buildServe builds cmd/mutatis once per test binary and returns its path;
// TestMain removes it.
func buildServe(t *testing.T) string {
	t.Helper()
	serveOnce.Do(func() {
		dir, err := os.MkdirTemp("", "mutatis-e2e-bin-")
		if err != nil {
			serveErr = err
			return
		}
		serveBin = filepath.Join(dir, "mutatis")
		args := []string{"build", "-o", serveBin}
		if os.Getenv("MUTATIS_E2E_RACE") != "0" {
			args = append(args, "-race")
		}
		build := exec.Command("go", append(args, "./cmd/mutatis")...)
		build.Dir = repoRoot(t)
		if out, err := build.CombinedOutput(); err != nil {
			serveErr = fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	})
	if serveErr != nil {
		t.Fatal(serveErr)
	}
	return serveBin
}

// served is a running `mutatis serve`.
type served struct {
	base string // https://127.0.0.1:PORT
	hc   *http.Client
	log  string
}

// startServe runs `mutatis serve` in informer mode against c, managing
// webhook configurations that call it, with extra flags, and waits until
// /readyz answers 200 over TLS verified with the CA of its
// --self-signed-dir. It is stopped when t ends; a data race in its log
// fails t.
func startServe(t *testing.T, bin string, c *Cluster, extra ...string) *served {
	t.Helper()
	return startServeWith(t, bin, c, c.Kubeconfig, extra...)
}

// startServeWith is startServe with mutatis reaching kube-apiserver through
// kubeconfig (e.g. a faultProxy's).
func startServeWith(t *testing.T, bin string, c *Cluster, kubeconfig string, extra ...string) *served {
	t.Helper()
	certDir := filepath.Join(c.Dir, "mutatis-certs")
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	logFile := filepath.Join(c.Dir, "mutatis-serve.log")
	// Registered before the process (cleanups run last-in first-out): runs
	// after it stopped and wrote everything.
	t.Cleanup(func() {
		log, _ := os.ReadFile(logFile)
		if bytes.Contains(log, []byte("WARNING: DATA RACE")) {
			t.Errorf("mutatis serve reported a data race:\n%s", log)
		} else if t.Failed() {
			t.Logf("==== %s (tail) ====\n%s", logFile, tail(logFile, 200))
		}
	})
	// mutatis' namespace (--namespace, default mutatis-system) holds its
	// leader-election Lease: with it, the single replica campaigns and
	// leads, as in a cluster.
	ns := mustObject(`{apiVersion: v1, kind: Namespace, metadata: {name: mutatis-system}}`)
	if _, err := c.Create(context.Background(), ns, false); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	s := &served{base: "https://" + addr, log: logFile}
	args := append([]string{"serve", "--kubeconfig", kubeconfig, "--listen", addr,
		"--self-signed-dir", certDir, "--webhook-url", s.base + "/mutate"}, extra...)
	p := startProcess(t, "mutatis serve", logFile, bin, args...)
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	err := p.waitReady(ctx, func(ctx context.Context) error {
		if s.hc == nil {
			ca, err := os.ReadFile(filepath.Join(certDir, "ca.crt"))
			if err != nil {
				return err
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(ca) {
				return fmt.Errorf("no certificate in %s/ca.crt yet", certDir)
			}
			s.hc = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}, Timeout: 10 * time.Second}
		}
		_, err := s.get(ctx, "/readyz")
		return err
	})
	if err != nil {
		t.Fatalf("mutatis serve did not become ready: %v\n%s", err, tail(logFile, 100))
	}
	// A lone replica holds the Lease before it reports ready.
	if st, err := s.status(ctx); err != nil || !st.Leader {
		t.Fatalf("mutatis serve is ready but not the leader: %+v, %v", st, err)
	}
	return s
}

// get returns the body of a 200 answer to GET path.
func (s *served) get(ctx context.Context, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.base+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %s", path, resp.Status, bytes.TrimSpace(body))
	}
	return body, nil
}

// serveStatus is /statusz (controller.Status).
type serveStatus struct {
	Generation uint64            `json:"generation"`
	Policies   map[string]string `json:"policies"`
	Bindings   map[string]string `json:"bindings"`
	Leader     bool              `json:"leader"`
}

func (s *served) status(ctx context.Context) (serveStatus, error) {
	var st serveStatus
	body, err := s.get(ctx, "/statusz")
	if err != nil {
		return st, err
	}
	return st, json.Unmarshal(body, &st)
}

// waitStatus waits until the Engine of s reflects exactly these policies
// and bindings (name → resourceVersion) and returns that status.
func (s *served) waitStatus(ctx context.Context, policies, bindings map[string]string) (serveStatus, error) {
	var last serveStatus
	var lastErr error
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err := poll(ctx, 50*time.Millisecond, func(ctx context.Context) (bool, error) {
		st, err := s.status(ctx)
		if lastErr = err; err != nil {
			return false, nil
		}
		last = st
		return maps.Equal(last.Policies, policies) && maps.Equal(last.Bindings, bindings), nil
	})
	if err != nil {
		return last, fmt.Errorf("/statusz does not show policies %v and bindings %v: %v (last: %+v, %v)", policies, bindings, err, last, lastErr)
	}
	return last, nil
}

// scanMetrics calls each for every sample of mutatis' /metrics: the
// metric's name, its labels (the text between the braces) and value.
func (s *served) scanMetrics(ctx context.Context, each func(name, labels string, value float64)) error {
	body, err := s.get(ctx, "/metrics")
	if err != nil {
		return err
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			return fmt.Errorf("/metrics: cannot read %q", line)
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return fmt.Errorf("/metrics: %q: %v", line, err)
		}
		name, labels, _ := strings.Cut(line[:i], "{")
		each(name, strings.TrimSuffix(labels, "}"), v)
	}
	return sc.Err()
}

// requests returns mutatis_webhook_requests_total summed over the codes,
// by path.
func (s *served) requests(ctx context.Context) (map[string]float64, error) {
	out := map[string]float64{}
	err := s.scanMetrics(ctx, func(name, labels string, v float64) {
		if name != "mutatis_webhook_requests_total" {
			return
		}
		for _, l := range strings.Split(labels, ",") {
			if p, ok := strings.CutPrefix(l, `path="`); ok {
				out[strings.TrimSuffix(p, `"`)] += v
			}
		}
	})
	return out, err
}

// metricValues returns the values of the unlabeled metrics names.
func (s *served) metricValues(ctx context.Context, names ...string) (map[string]float64, error) {
	out := map[string]float64{}
	err := s.scanMetrics(ctx, func(name, labels string, v float64) {
		if labels == "" && slices.Contains(names, name) {
			out[name] = v
		}
	})
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		if _, ok := out[n]; !ok {
			return nil, fmt.Errorf("/metrics has no %s", n)
		}
	}
	return out, nil
}

// review posts an AdmissionReview to path and returns its response.
func (s *served) review(ctx context.Context, path string, r *admissionv1.AdmissionReview) (*admissionv1.AdmissionResponse, error) {
	body, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.base+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("POST %s: %s: %s", path, resp.Status, bytes.TrimSpace(data))
	}
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, err
	}
	if out.Response == nil || out.Response.UID != r.Request.UID {
		return nil, fmt.Errorf("POST %s: response without the request's uid: %s", path, data)
	}
	return out.Response, nil
}

// createReview is the AdmissionReview kube-apiserver sends for the CREATE
// of u (resource: its plural), by the admin, and u as sent.
func createReview(u *unstructured.Unstructured, resource string) (*admissionv1.AdmissionReview, []byte, error) {
	obj := u.DeepCopy().Object
	if md, ok := obj["metadata"].(map[string]any); ok {
		md["creationTimestamp"] = nil
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, nil, err
	}
	gv := u.GroupVersionKind()
	gvk := metav1.GroupVersionKind{Group: gv.Group, Version: gv.Version, Kind: gv.Kind}
	gvr := metav1.GroupVersionResource{Group: gv.Group, Version: gv.Version, Resource: resource}
	opts, err := json.Marshal(metav1.CreateOptions{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "CreateOptions"}})
	if err != nil {
		return nil, nil, err
	}
	return &admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID: types.UID(uuid.NewUUID()), Kind: gvk, Resource: gvr, RequestKind: &gvk, RequestResource: &gvr,
			Name: u.GetName(), Namespace: u.GetNamespace(), Operation: admissionv1.Create,
			UserInfo: authenticationv1.UserInfo{Username: adminUser, UID: adminUID, Groups: []string{"system:masters", "system:authenticated"}},
			Object:   runtime.RawExtension{Raw: raw},
			Options:  runtime.RawExtension{Raw: opts},
		},
	}, raw, nil
}

// admit sends the CREATE review of u (resource: its plural) straight to
// /mutate and returns the response and, when it is allowed, u with the
// response's patch applied.
func (s *served) admit(ctx context.Context, u *unstructured.Unstructured, resource string) (*unstructured.Unstructured, *admissionv1.AdmissionResponse, error) {
	r, raw, err := createReview(u, resource)
	if err != nil {
		return nil, nil, err
	}
	resp, err := s.review(ctx, "/mutate", r)
	if err != nil || !resp.Allowed {
		return nil, resp, err
	}
	out := raw
	if len(resp.Patch) > 0 {
		p, err := jsonpatch.DecodePatch(resp.Patch)
		if err != nil {
			return nil, nil, err
		}
		if out, err = p.Apply(raw); err != nil {
			return nil, nil, err
		}
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		return nil, nil, err
	}
	return &unstructured.Unstructured{Object: m}, resp, nil
}

// installShadowCRDs creates the mutatis.dev CRDs of deploy/base/crds and
// waits until they are established.
func installShadowCRDs(t *testing.T, c *Cluster) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot(t), "deploy", "base", "crds", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no shadow CRDs in deploy/base/crds (%v)", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, f := range files {
		docs, _, err := readDocs(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range docs {
			if _, err := c.Create(ctx, d, false); err != nil {
				t.Fatalf("creating %s from %s: %v", kindKey(d), f, err)
			}
			waitEstablished(t, ctx, c, d)
		}
	}
	c.Mapper.Reset()
}

// waitEstablished waits until the CustomResourceDefinition crd is
// established.
func waitEstablished(t *testing.T, ctx context.Context, c *Cluster, crd *unstructured.Unstructured) {
	t.Helper()
	ri, err := c.resourceFor(crd)
	if err != nil {
		t.Fatal(err)
	}
	err = poll(ctx, 200*time.Millisecond, func(ctx context.Context) (bool, error) {
		got, err := ri.Get(ctx, crd.GetName(), metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, cond := range conds {
			m, _ := cond.(map[string]any)
			if m["type"] == "Established" && m["status"] == "True" {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("%s not established: %v", kindKey(crd), err)
	}
}
