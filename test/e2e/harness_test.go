//go:build linux

package e2e

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Mode selects how kube-apiserver treats MutatingAdmissionPolicies.
type Mode int

const (
	// NativeMAP: the MutatingAdmissionPolicy admission plugin is enabled
	// (GA and on by default in 1.37; the flags say so explicitly).
	NativeMAP Mode = iota
	// NoMAP: the API serves MutatingAdmissionPolicy objects but the
	// admission plugin is disabled, as in a cluster mutatis polyfills.
	NoMAP
	// DefaultAdmission: kube-apiserver's default admission plugins, all of
	// them (ServiceAccount included), and the MAP plugin.
	DefaultAdmission
)

func (m Mode) String() string {
	switch m {
	case NoMAP:
		return "MAP plugin disabled"
	case DefaultAdmission:
		return "default admission plugins"
	}
	return "MAP plugin enabled"
}

// harnessDisabledPlugins are the default admission plugins kube-apiserver
// runs without in the modes NativeMAP and NoMAP: the ServiceAccount
// plugin needs the default ServiceAccount, which only
// kube-controller-manager creates, and adds token volumes with random
// names. Offline comparisons with those modes disable them too
// (admissionplugins.Flags).
var harnessDisabledPlugins = []string{"ServiceAccount"}

const (
	adminToken = "mutatis-e2e-admin-token"
	adminUser  = "admin"
	adminUID   = "admin-uid"
	// startTimeout bounds one start of etcd or kube-apiserver, generous
	// for a loaded 2-core machine.
	startTimeout = 4 * time.Minute
	// stopGrace is how long a process group gets between SIGTERM and SIGKILL.
	stopGrace = 20 * time.Second
)

// binaries are the etcd and kube-apiserver built by test/e2e/build.sh.
type binaries struct {
	kubeAPIServer, etcd      string
	kubeVersion, etcdVersion string
}

// repoRoot is the main module's root (tests run in test/e2e).
func repoRoot(t testing.TB) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// requiredVersion returns the version gomod requires of module, as
// build.sh reads it.
func requiredVersion(gomod, module string) (string, error) {
	data, err := os.ReadFile(gomod)
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == module && strings.HasPrefix(f[1], "v") {
			return f[1], nil
		}
		if len(f) >= 3 && f[0] == "require" && f[1] == module {
			return f[2], nil
		}
	}
	return "", fmt.Errorf("%s does not require %s", gomod, module)
}

// findBinaries locates the binaries or skips the test: they are used when
// MUTATIS_E2E=1 (then missing binaries are an error) or when present in the
// cache; MUTATIS_E2E=0 always skips.
func findBinaries(t *testing.T) binaries {
	t.Helper()
	if runtimeSkip := os.Getenv("MUTATIS_E2E"); runtimeSkip == "0" {
		t.Skip("e2e: MUTATIS_E2E=0")
	}
	root := repoRoot(t)
	kv, err := requiredVersion(filepath.Join(root, "test/e2e/build/kube-apiserver/go.mod"), "k8s.io/kubernetes")
	if err != nil {
		t.Fatal(err)
	}
	ev, err := requiredVersion(filepath.Join(root, "test/e2e/build/etcd/go.mod"), "go.etcd.io/etcd/server/v3")
	if err != nil {
		t.Fatal(err)
	}
	cache := os.Getenv("MUTATIS_E2E_CACHE")
	if cache == "" {
		cache = filepath.Join(root, ".cache", "e2e")
	}
	b := binaries{
		kubeAPIServer: filepath.Join(cache, "bin", "kube-apiserver-"+kv),
		etcd:          filepath.Join(cache, "bin", "etcd-"+ev),
		kubeVersion:   kv, etcdVersion: ev,
	}
	var missing []string
	for _, p := range []string{b.kubeAPIServer, b.etcd} {
		// The stamp is written only after a complete build.
		if _, err := os.Stat(p + ".stamp"); err != nil {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		msg := fmt.Sprintf("e2e: kube-apiserver %s and etcd %s are not built (%s missing); run `make e2e`, or test/e2e/build.sh then MUTATIS_E2E=1 go test ./test/e2e (docs/e2e.md)", kv, ev, strings.Join(missing, ", "))
		if os.Getenv("MUTATIS_E2E") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return b
}

// Cluster is a running etcd + kube-apiserver, stopped when the test ends.
type Cluster struct {
	Mode Mode
	// Config authenticates as the admin (system:masters).
	Config *rest.Config
	// Kubeconfig is a kubeconfig file for Config.
	Kubeconfig string
	Client     kubernetes.Interface
	Dynamic    dynamic.Interface
	Mapper     meta.ResettableRESTMapper
	// Dir holds certificates, data and logs (under t.TempDir()).
	Dir string
	// APIServerLog is kube-apiserver's log file (of its latest start).
	APIServerLog string
	// AuditLog is kube-apiserver's audit log (JSON lines, level Metadata
	// for writes: their audit annotations).
	AuditLog string

	t         *testing.T
	bin       binaries
	etcdURL   string
	certs     pkiFiles
	port      int      // kube-apiserver's secure port, kept across restarts
	logs      []string // every log file, printed on failure
	apiserver *process
	starts    int
}

// StartCluster starts etcd and kube-apiserver in mode and waits until the
// API server is ready. Both are stopped (process groups, SIGTERM then
// SIGKILL) when t ends; on failure their logs are printed.
func StartCluster(t *testing.T, mode Mode) *Cluster {
	t.Helper()
	bin := findBinaries(t)
	dir := t.TempDir()
	c := &Cluster{Mode: mode, Dir: dir, t: t, bin: bin}
	t.Cleanup(func() {
		if t.Failed() {
			for _, l := range c.logs {
				t.Logf("==== %s (tail) ====\n%s", l, tail(l, 200))
			}
		}
	})

	ctx, cancel := context.WithTimeout(context.Background(), 2*startTimeout)
	defer cancel()
	c.certs = writePKI(t, dir)

	// Free ports are picked by binding :0 and closing; another process may
	// take one in between, so a start that fails to bind is retried.
	for attempt := 1; ; attempt++ {
		client, peer := freePort(t), freePort(t)
		c.etcdURL = "http://127.0.0.1:" + strconv.Itoa(client)
		peerURL := "http://127.0.0.1:" + strconv.Itoa(peer)
		logFile := filepath.Join(dir, fmt.Sprintf("etcd-%d.log", attempt))
		c.logs = append(c.logs, logFile)
		p := startProcess(t, "etcd", logFile, bin.etcd,
			"--name=e2e",
			"--data-dir="+filepath.Join(dir, fmt.Sprintf("etcd-data-%d", attempt)),
			"--listen-client-urls="+c.etcdURL, "--advertise-client-urls="+c.etcdURL,
			"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
			"--initial-cluster=e2e="+peerURL,
			"--unsafe-no-fsync", "--log-level=warn",
		)
		err := p.waitReady(ctx, func(ctx context.Context) error { return etcdHealthy(ctx, c.etcdURL) })
		if err == nil {
			break
		}
		p.stop()
		if attempt < 3 && strings.Contains(tail(logFile, 50), "address already in use") {
			continue
		}
		t.Fatalf("etcd %s did not become healthy: %v\n%s", bin.etcdVersion, err, tail(logFile, 100))
	}

	// The current kube-apiserver (restarts replace it) stops before etcd
	// and after everything started later, such as mutatis.
	t.Cleanup(func() {
		if c.apiserver != nil {
			c.apiserver.stop()
		}
	})
	for attempt := 1; ; attempt++ {
		c.port = freePort(t)
		err := c.startAPIServer(ctx)
		if err == nil {
			break
		}
		if attempt < 3 && strings.Contains(tail(c.APIServerLog, 50), "address already in use") {
			continue
		}
		t.Fatalf("kube-apiserver %s (%s) did not become ready: %v\n%s", bin.kubeVersion, mode, err, tail(c.APIServerLog, 100))
	}

	var err error
	if c.Client, err = kubernetes.NewForConfig(c.Config); err != nil {
		t.Fatal(err)
	}
	if c.Dynamic, err = dynamic.NewForConfig(c.Config); err != nil {
		t.Fatal(err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	c.Mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	c.Kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := writeKubeconfig(c.Kubeconfig, c.Config); err != nil {
		t.Fatal(err)
	}
	t.Logf("e2e: kube-apiserver %s (%s) ready at %s, etcd %s", bin.kubeVersion, mode, c.Config.Host, bin.etcdVersion)
	return c
}

// startAPIServer starts kube-apiserver on c.port against c's etcd and waits
// until it is ready; on failure the process is stopped.
func (c *Cluster) startAPIServer(ctx context.Context) error {
	c.starts++
	host := "https://127.0.0.1:" + strconv.Itoa(c.port)
	logFile := filepath.Join(c.Dir, fmt.Sprintf("kube-apiserver-%d.log", c.starts))
	c.logs = append(c.logs, logFile)
	c.APIServerLog = logFile
	args := []string{
		"--etcd-servers=" + c.etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(c.port),
		"--cert-dir=" + filepath.Join(c.Dir, "apiserver-certs"),
		"--tls-cert-file=" + c.certs.servingCert, "--tls-private-key-file=" + c.certs.servingKey,
		"--token-auth-file=" + c.certs.tokenFile,
		"--authorization-mode=RBAC",
		"--service-account-key-file=" + c.certs.saPublic,
		"--service-account-signing-key-file=" + c.certs.saPrivate,
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-cluster-ip-range=10.0.0.0/24",
		// Without a kubelet or controllers the endpoints of the
		// kubernetes Service would only produce errors.
		"--endpoint-reconciler-type=none",
		"--runtime-config=admissionregistration.k8s.io/v1=true",
		"--enable-priority-and-fairness=false",
		"--profiling=false",
	}
	// The audit log holds the audit annotations of admission
	// (TestValidatingStage): writes at level Metadata, nothing else.
	c.AuditLog = filepath.Join(c.Dir, "audit.log")
	auditPolicy := filepath.Join(c.Dir, "audit-policy.yaml")
	if err := os.WriteFile(auditPolicy, []byte(auditPolicyYAML), 0o644); err != nil {
		return err
	}
	args = append(args, "--audit-log-path="+c.AuditLog, "--audit-policy-file="+auditPolicy, "--audit-log-format=json")
	// harnessDisabledPlugins are off in NativeMAP and NoMAP.
	disabled := strings.Join(harnessDisabledPlugins, ",")
	switch c.Mode {
	case NativeMAP:
		args = append(args, "--enable-admission-plugins=MutatingAdmissionPolicy", "--disable-admission-plugins="+disabled)
	case NoMAP:
		args = append(args, "--disable-admission-plugins="+disabled+",MutatingAdmissionPolicy")
	case DefaultAdmission:
		args = append(args, "--enable-admission-plugins=MutatingAdmissionPolicy")
	}
	p := launchProcess(c.t, "kube-apiserver", logFile, c.bin.kubeAPIServer, args...)
	c.Config = &rest.Config{
		Host:            host,
		BearerToken:     adminToken,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.certs.caPEM},
		QPS:             100, Burst: 200,
	}
	if err := p.waitReady(ctx, func(ctx context.Context) error { return apiserverReady(ctx, c.Config) }); err != nil {
		p.stop()
		return err
	}
	c.apiserver = p
	return nil
}

// auditPolicyYAML records writes at level Metadata (their annotations),
// after they complete, and nothing else.
const auditPolicyYAML = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted]
rules:
- level: Metadata
  verbs: [create, update, patch, delete]
- level: None
`

// apiserverStopGrace is the grace period of StopAPIServer: kube-apiserver
// with clients' watches open often does not exit within stopGrace.
const apiserverStopGrace = 5 * time.Second

// StopAPIServer stops kube-apiserver (SIGTERM, as a rolling update does;
// SIGKILL after apiserverStopGrace); etcd keeps running.
func (c *Cluster) StopAPIServer() {
	c.t.Helper()
	if c.apiserver == nil {
		c.t.Fatal("kube-apiserver is not running")
	}
	c.apiserver.stopWithin(apiserverStopGrace)
	c.apiserver = nil
}

// StartAPIServer starts kube-apiserver again after StopAPIServer, on the
// same address with the same flags and etcd, and waits until it is ready.
func (c *Cluster) StartAPIServer(ctx context.Context) {
	c.t.Helper()
	if c.apiserver != nil {
		c.t.Fatal("kube-apiserver is already running")
	}
	if err := c.startAPIServer(ctx); err != nil {
		c.t.Fatalf("kube-apiserver did not restart: %v\n%s", err, tail(c.APIServerLog, 100))
	}
}

func writeKubeconfig(path string, cfg *rest.Config) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["e2e"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: "admin"}
	kc.CurrentContext = "e2e"
	return clientcmd.WriteToFile(*kc, path)
}

func etcdHealthy(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/health", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var buf [256]byte
	n, _ := resp.Body.Read(buf[:])
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(buf[:n]), `"health":"true"`) {
		return fmt.Errorf("etcd /health: %d %s", resp.StatusCode, buf[:n])
	}
	return nil
}

func apiserverReady(ctx context.Context, cfg *rest.Config) error {
	rc, err := rest.UnversionedRESTClientFor(withDefaults(cfg))
	if err != nil {
		return err
	}
	body, err := rc.Get().AbsPath("/readyz").Param("verbose", "true").DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("/readyz: %v: %s", err, body)
	}
	return nil
}

func withDefaults(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Timeout = 10 * time.Second
	if c.NegotiatedSerializer == nil {
		c.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	}
	return c
}

// process is a child process in its own process group.
type process struct {
	t       *testing.T
	name    string
	cmd     *exec.Cmd
	done    chan struct{}
	waitErr error
	once    sync.Once
}

func startProcess(t *testing.T, name, logFile, path string, args ...string) *process {
	t.Helper()
	p := launchProcess(t, name, logFile, path, args...)
	t.Cleanup(p.stop)
	return p
}

// launchProcess is startProcess without the cleanup: the caller stops it.
func launchProcess(t *testing.T, name, logFile, path string, args ...string) *process {
	t.Helper()
	f, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = f, f
	// Own process group (stopped as a whole); killed if the test binary
	// dies without running cleanups (e.g. on a -timeout panic).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("starting %s: %v", name, err)
	}
	p := &process{t: t, name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p
}

// waitReady polls ready until it succeeds, the process exits or ctx ends.
func (p *process) waitReady(ctx context.Context, ready func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		select {
		case <-p.done:
			return fmt.Errorf("%s exited: %v", p.name, p.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %v (last: %v)", p.name, ctx.Err(), last)
		case <-tick.C:
			rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
			last = ready(rctx)
			rcancel()
			if last == nil {
				return nil
			}
		}
	}
}

// stop sends SIGTERM to the process group, then SIGKILL after stopGrace,
// and waits for the process to exit.
func (p *process) stop() { p.stopWithin(stopGrace) }

// stopWithin is stop with another grace period.
func (p *process) stopWithin(grace time.Duration) {
	p.once.Do(func() {
		pgid := p.cmd.Process.Pid
		select {
		case <-p.done:
		default:
			_ = syscall.Kill(-pgid, syscall.SIGTERM)
			timer := time.NewTimer(grace)
			defer timer.Stop()
			select {
			case <-p.done:
			case <-timer.C:
				p.t.Logf("%s did not exit %s after SIGTERM; killing", p.name, grace)
				_ = syscall.Kill(-pgid, syscall.SIGKILL)
				<-p.done
			}
		}
		// Anything left in the group (there should be nothing).
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	})
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// tail returns the last n lines of a file (at most 64 KiB).
func tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > 64<<10 {
		_, _ = f.Seek(st.Size()-64<<10, 0)
	}
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

type pkiFiles struct {
	caPEM                   []byte
	servingCert, servingKey string
	saPrivate, saPublic     string
	tokenFile               string
}

// writePKI generates a CA, a serving certificate for 127.0.0.1 and
// localhost, a service-account key pair and the static token file.
func writePKI(t *testing.T, dir string) pkiFiles {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		must(err)
		return k
	}
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		must(os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600))
		return p
	}
	now := time.Now()
	caKey := newKey()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "mutatis-e2e-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, IsCA: true, BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	must(err)
	ca, err := x509.ParseCertificate(caDER)
	must(err)

	srvKey := newKey()
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kube-apiserver"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.1")},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, ca, &srvKey.PublicKey, caKey)
	must(err)
	srvKeyDER, err := x509.MarshalPKCS8PrivateKey(srvKey)
	must(err)

	saKey := newKey()
	saDER, err := x509.MarshalPKCS8PrivateKey(saKey)
	must(err)
	saPubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	must(err)

	tokens := filepath.Join(dir, "tokens.csv")
	must(os.WriteFile(tokens, []byte(fmt.Sprintf("%s,%s,%s,\"system:masters\"\n", adminToken, adminUser, adminUID)), 0o600))
	return pkiFiles{
		caPEM:       pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		servingCert: write("serving.crt", "CERTIFICATE", srvDER),
		servingKey:  write("serving.key", "PRIVATE KEY", srvKeyDER),
		saPrivate:   write("sa.key", "PRIVATE KEY", saDER),
		saPublic:    write("sa.pub", "PUBLIC KEY", saPubDER),
		tokenFile:   tokens,
	}
}

// poll calls cond every interval until it returns true or an error, or ctx
// ends.
func poll(ctx context.Context, interval time.Duration, cond func(context.Context) (bool, error)) error {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		ok, err := cond(ctx)
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), errors.New("condition not met"))
		case <-tick.C:
		}
	}
}
