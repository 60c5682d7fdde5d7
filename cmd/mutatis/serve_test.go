package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mutatis-dev/mutatis/controller"
	"github.com/mutatis-dev/mutatis/webhook/certs"
)

// lockedBuffer collects what a running command writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.WriteString(s)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startServe runs `mutatis serve args…` until the test ends and returns
// the address it listens on, and its stderr so far.
func startServe(t *testing.T, args ...string) (addr string, stderr *lockedBuffer, stop func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	stderr = &lockedBuffer{}
	addrc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			stderr.add(line + "\n")
			if _, rest, ok := strings.Cut(line, "listening on https://"); ok {
				addr, _, _ := strings.Cut(rest, " ")
				addrc <- addr
			}
		}
		close(addrc)
	}()
	codec := make(chan int, 1)
	go func() {
		var out strings.Builder
		// No drain: the tests stop serve at once.
		code := run(ctx, append([]string{"serve", "--shutdown-drain=0"}, args...), strings.NewReader(""), &out, pw)
		pw.Close()
		codec <- code
	}()
	var once sync.Once
	code := -1
	stop = func() int {
		once.Do(func() {
			cancel()
			code = <-codec
		})
		return code
	}
	t.Cleanup(func() { stop() })
	addr, ok := <-addrc
	if !ok {
		t.Fatalf("serve exited with %d before listening:\n%s", stop(), stderr)
	}
	return addr, stderr, stop
}

func TestServeStatic(t *testing.T) {
	certDir := filepath.Join(t.TempDir(), "certs")
	addr, stderr, stop := startServe(t,
		"--policies", "../../examples", "--resources", "../../examples",
		"--self-signed-dir", certDir, "--listen", "127.0.0.1:0", "--explain-dry-run", "--reload-interval", "0")
	if !strings.Contains(stderr.String(), "CA certificate (new): "+filepath.Join(certDir, certs.CACertFile)) {
		t.Errorf("stderr does not name the CA:\n%s", stderr)
	}
	server := "https://" + addr + "/mutate"
	ca := filepath.Join(certDir, certs.CACertFile)

	cases := []struct {
		name       string
		args       []string
		wantCode   int
		wantOut    []string
		wantStderr []string
	}{
		{
			name:     "a Pod gets the patch of the example policies",
			args:     []string{"-f", "../../webhook/testdata/pod.yaml"},
			wantCode: exitOK,
			wantOut:  []string{`{"op":"replace","path":"/spec/containers/0/image","value":"mirror.example.com/library/nginx:1.27"}`, `"name":"log-shipper"`},
			wantStderr: []string{
				"audit annotation: policies=", "inject-logging-sidecar/inject-logging-sidecar",
			},
		},
		{
			name:       "a v1beta1 dry run gets the explanation in warnings",
			args:       []string{"-f", "../../webhook/testdata/pod.yaml", "--review-version", "v1beta1", "--dry-run"},
			wantCode:   exitOK,
			wantOut:    []string{"mirror.example.com"},
			wantStderr: []string{"warning: mutatis: pass 1: rewrite-docker-hub-images/rewrite-docker-hub-images: applied"},
		},
		{
			name:     "a Deployment gets default requests from the params in --resources",
			args:     []string{"-f", "testdata/apply/deployment.yaml"},
			wantCode: exitOK,
			wantOut:  []string{`"cpu":"250m"`},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, "", append([]string{"review", "--server", server, "--ca", ca}, tc.args...)...)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.wantCode, out, errOut)
			}
			for _, w := range tc.wantOut {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tc.wantStderr {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut)
				}
			}
		})
	}
	if code := stop(); code != exitOK {
		t.Fatalf("serve exited with %d:\n%s", code, stderr)
	}

	// A second start reuses the certificates.
	_, stderr, stop = startServe(t, "--policies", "../../examples", "--self-signed-dir", certDir, "--listen", "127.0.0.1:0")
	if !strings.Contains(stderr.String(), "CA certificate (reusing)") {
		t.Errorf("the CA was not reused:\n%s", stderr)
	}
	stop()
}

func TestServeBadFlags(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	certDir := filepath.Join(dir, "certs")
	cases := []struct {
		name string
		args []string
		want string
	}{
		{name: "no certificate", args: []string{"--policies", "../../examples"}, want: "serving needs a certificate"},
		{name: "a certificate without key", args: []string{"--policies", "../../examples", "--tls-cert-file", "x"}, want: "go together"},
		{name: "resources without policies", args: []string{"--resources", "../../examples", "--self-signed-dir", certDir}, want: "--resources needs --policies"},
		{name: "static and informer mode at once", args: []string{"--policies", "../../examples", "--kubeconfig", kubeconfig, "--self-signed-dir", certDir}, want: "exclude each other"},
		{name: "an unknown source", args: []string{"--kubeconfig", kubeconfig, "--source", "etcd", "--self-signed-dir", certDir}, want: "--source must be native or shadow"},
		{name: "broken policies", args: []string{"--policies", "testdata/lint/bad.yaml", "--self-signed-dir", certDir, "--listen", "127.0.0.1:0"}, want: "spec.reinvocationPolicy: Required value"},
		{name: "native informer mode needs the acknowledgment that the built-in plugin is off", args: []string{"--kubeconfig", kubeconfig, "--self-signed-dir", certDir, "--listen", "127.0.0.1:0"}, want: "refusing to start in native mode"},
		{name: "webhook URL and Service exclude each other", args: []string{"--kubeconfig", kubeconfig, "--source", "shadow", "--self-signed-dir", certDir, "--webhook-url", "https://127.0.0.1:1/mutate", "--webhook-service", "mutatis"}, want: "--webhook-url and --webhook-service exclude each other"},
		{name: "a negative in-flight bound", args: []string{"--policies", "../../examples", "--self-signed-dir", certDir, "--max-in-flight", "-1"}, want: "--max-in-flight must not be negative"},
		{name: "the secret certificate needs informer mode", args: []string{"--policies", "x.yaml", "--self-signed-cert-secret", "tls"}, want: "--self-signed-cert-secret is a certificate source of informer mode"},
		{name: "leader election applies to informer mode", args: []string{"--policies", "../../examples", "--self-signed-dir", certDir, "--leader-elect=false"}, want: "--leader-elect, --leader-elect-lease-name and --leader-elect-identity apply to informer mode"},
		{name: "write timeout applies to informer mode", args: []string{"--policies", "../../examples", "--self-signed-dir", certDir, "--write-timeout", "5s"}, want: "--write-timeout applies to informer mode"},
		{name: "write timeout must be positive", args: []string{"--kubeconfig", kubeconfig, "--source", "shadow", "--self-signed-dir", certDir, "--write-timeout", "0s"}, want: "--write-timeout must be positive"},
		{name: "a lease name applies to informer mode", args: []string{"--policies", "../../examples", "--self-signed-dir", certDir, "--leader-elect-lease-name", "x"}, want: "apply to informer mode"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, "", append([]string{"serve"}, tc.args...)...)
			if code != exitUsage || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr:\n%s%s\nwant exit %d and %q", code, out, errOut, exitUsage, tc.want)
			}
		})
	}
}

func TestServeLeaderElectionFlags(t *testing.T) {
	for _, tc := range []struct {
		name    string
		podName string
		args    []string
		want    controller.LeaderElectionOptions
	}{
		{name: "informer mode elects a leader by default, named after the pod", podName: "mutatis-7d9f-abcde",
			want: controller.LeaderElectionOptions{Enabled: true, Identity: "mutatis-7d9f-abcde"}},
		{name: "without a pod name the controller picks the identity",
			want: controller.LeaderElectionOptions{Enabled: true}},
		{name: "the lease name and identity can be set", podName: "ignored",
			args: []string{"--leader-elect-lease-name", "mutatis-lock", "--leader-elect-identity", "replica-1"},
			want: controller.LeaderElectionOptions{Enabled: true, LeaseName: "mutatis-lock", Identity: "replica-1"}},
		{name: "a single replica may turn it off", args: []string{"--leader-elect=false"},
			want: controller.LeaderElectionOptions{Enabled: false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("POD_NAME", tc.podName)
			cmd := newServeCommand()
			if err := cmd.ParseFlags(tc.args); err != nil {
				t.Fatal(err)
			}
			// The flags are bound to the command's serveOptions; read them
			// back into one.
			f := cmd.Flags()
			var o serveOptions
			var err error
			if o.leaderElect, err = f.GetBool("leader-elect"); err != nil {
				t.Fatal(err)
			}
			if o.leaderElectLeaseName, err = f.GetString("leader-elect-lease-name"); err != nil {
				t.Fatal(err)
			}
			if o.leaderElectIdentity, err = f.GetString("leader-elect-identity"); err != nil {
				t.Fatal(err)
			}
			if got := o.leaderElection(); got != tc.want {
				t.Fatalf("leader election %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestCerts(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	cases := []struct {
		name     string
		args     []string
		wantCode int
		want     []string
	}{
		{name: "a new directory gets a new CA", args: []string{"--dir", dir, "--hosts", "mutatis.mutatis-system.svc,10.0.0.7", "--days", "30"}, wantCode: exitOK,
			want: []string{"CA certificate (new): " + filepath.Join(dir, "ca.crt"), "serving certificate: " + filepath.Join(dir, "tls.crt") + " (mutatis.mutatis-system.svc, 10.0.0.7, 30 days)"}},
		{name: "a rotation keeps the CA", args: []string{"--dir", dir, "--hosts", "mutatis.mutatis-system.svc,10.0.0.7"}, wantCode: exitOK,
			want: []string{"CA certificate (kept)"}},
		{name: "no directory", args: []string{"--hosts", "a"}, wantCode: exitUsage, want: []string{"--dir is required"}},
		{name: "no days", args: []string{"--dir", dir, "--days", "0"}, wantCode: exitUsage, want: []string{"--days must be positive"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, "", append([]string{"certs"}, tc.args...)...)
			checkCLI(t, code, out, errOut, tc.wantCode, tc.want, nil)
		})
	}
	// The files verify for every host, a year ahead.
	if err := certs.Check(certs.PathsIn(dir), []string{"mutatis.mutatis-system.svc", "10.0.0.7"}, time.Now().Add(300*24*time.Hour)); err != nil {
		t.Error(err)
	}
}

// TestServeLogFormat: --log-format json writes serve's log as JSON lines
// (the start line with the build first); a bad format is bad input.
func TestServeLogFormat(t *testing.T) {
	certDir := filepath.Join(t.TempDir(), "certs")
	_, stderr, _ := startServe(t, "--log-format", "json",
		"--policies", "../../examples", "--resources", "../../examples",
		"--self-signed-dir", certDir, "--listen", "127.0.0.1:0", "--reload-interval", "0")
	found := false
	for _, line := range strings.Split(stderr.String(), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == "mutatis" && rec["kubernetes"] != nil && rec["level"] == "INFO" {
			found = true
		}
	}
	if !found {
		t.Errorf("no JSON start record in stderr:\n%s", stderr)
	}
	code, _, errOut := runCLI(t, "", "serve", "--log-format", "xml", "--policies", "../../examples", "--self-signed-dir", certDir)
	if code != exitUsage || !strings.Contains(errOut, `--log-format must be text or json, not "xml"`) {
		t.Errorf("exit %d: %s", code, errOut)
	}
}

// --cpuprofile writes a profile that runtime/pprof wrote, and fails on a
// file it cannot create.
func TestStartCPUProfile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "serve.cpu")
	stop, err := startCPUProfile(file)
	if err != nil {
		t.Fatal(err)
	}
	stop()
	if data, err := os.ReadFile(file); err != nil || len(data) == 0 {
		t.Errorf("the profile: %d bytes, %v", len(data), err)
	}
	if _, err := startCPUProfile(filepath.Join(t.TempDir(), "no", "such", "dir", "x.cpu")); err == nil || !strings.Contains(err.Error(), "--cpuprofile") {
		t.Errorf("startCPUProfile in a missing directory: %v", err)
	}
}
