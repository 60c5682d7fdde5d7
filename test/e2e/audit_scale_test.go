//go:build linux

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/mutatis-dev/mutatis/test/load"
)

// The audit benchmark's cluster: 1,000 namespaces (scaleNamespaces) of 50
// ConfigMaps, 20 Deployments and 30 Pods (three ReplicaSets' ten each):
// 100,000 objects.
const (
	scaleDefaultNamespaces = 1000
	scaleConfigMaps        = 50
	scaleDeployments       = 20
	scalePods              = 30
	// The bounds for the whole audit.
	scaleMaxSeconds = 60
	scaleMaxRSSMB   = 500
)

// scalePolicies writes 20 policies with their bindings: labels and
// annotations on ConfigMaps, Deployments (and their templates) and Pods,
// with matchConditions, namespace selectors and a param-free variable.
func scalePolicies(t *testing.T, dir string) string {
	t.Helper()
	resources := []struct{ group, resource string }{{"", "configmaps"}, {"apps", "deployments"}, {"", "pods"}}
	var b strings.Builder
	for i := range 20 {
		r := resources[i%3]
		cond := "true"
		if i%4 == 1 {
			cond = fmt.Sprintf("!has(object.metadata.labels) || !('skip-%d' in object.metadata.labels)", i)
		}
		fmt.Fprintf(&b, `---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: scale-%02d}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [%q], apiVersions: ["v1"], operations: ["CREATE"], resources: [%q]}
  matchConditions:
  - {name: cond, expression: %q}
  variables:
  - {name: team, expression: "namespaceObject.metadata.name"}
  failurePolicy: Fail
  reinvocationPolicy: Never
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: 'Object{metadata: Object.metadata{labels: {"scale-%02d": variables.team}}}'
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: scale-%02d}
spec:
  policyName: scale-%02d
  matchResources:
    namespaceSelector: {matchLabels: {audit.mutatis.dev/scale: "yes"}}
`, i, r.group, r.resource, cond, i, i, i)
	}
	path := filepath.Join(dir, "policies.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// seedScale creates the benchmark's objects with parallel clients.
func seedScale(t *testing.T, ctx context.Context, cfg *rest.Config, namespaces int) {
	t.Helper()
	fast := rest.CopyConfig(cfg)
	fast.QPS, fast.Burst = 5000, 10000
	dyn, err := dynamic.NewForConfig(fast)
	if err != nil {
		t.Fatal(err)
	}
	type item struct {
		gvr schema.GroupVersionResource
		obj *unstructured.Unstructured
	}
	var mu sync.Mutex
	var firstErr error
	// pool creates what it is sent, 24 at a time, until the channel
	// closes; wait waits for the last creation.
	pool := func() (chan<- item, func()) {
		work := make(chan item, 256)
		var wg sync.WaitGroup
		for range 24 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for it := range work {
					ri := dyn.Resource(it.gvr).Namespace(it.obj.GetNamespace())
					if it.gvr.Resource == "namespaces" {
						ri = dyn.Resource(it.gvr)
					}
					if _, err := ri.Create(ctx, it.obj, metav1.CreateOptions{}); err != nil {
						mu.Lock()
						if firstErr == nil {
							firstErr = fmt.Errorf("creating %s %s/%s: %w", it.gvr.Resource, it.obj.GetNamespace(), it.obj.GetName(), err)
						}
						mu.Unlock()
					}
				}
			}()
		}
		return work, func() { close(work); wg.Wait() }
	}
	nsGVR := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	cmGVR := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	deployGVR := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	podGVR := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	start := time.Now()
	// Namespaces first: their objects need them.
	work, wait := pool()
	for n := range namespaces {
		ns := fmt.Sprintf("scale-%04d", n)
		work <- item{nsGVR, mustObject(`{apiVersion: v1, kind: Namespace, metadata: {name: ` + ns + `, labels: {audit.mutatis.dev/scale: "yes"}}}`)}
	}
	wait()
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	work, wait = pool()
	for n := range namespaces {
		ns := fmt.Sprintf("scale-%04d", n)
		for j := range scaleConfigMaps {
			work <- item{cmGVR, mustObject(fmt.Sprintf(`{apiVersion: v1, kind: ConfigMap, metadata: {name: cm-%02d, namespace: %s, labels: {app: cm, skip-%d: "x"}}, data: {index: "%d", payload: "%s"}}`, j, ns, j%20, j, strings.Repeat("v", 200)))}
		}
		for j := range scaleDeployments {
			work <- item{deployGVR, mustObject(fmt.Sprintf(`
apiVersion: apps/v1
kind: Deployment
metadata: {name: web-%02d, namespace: %s, labels: {app: web-%02d}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web-%02d}}
  template:
    metadata: {labels: {app: web-%02d}}
    spec:
      containers: [{name: web, image: "nginx:1.27", ports: [{containerPort: 80}], resources: {requests: {cpu: 10m, memory: 16Mi}}}]
`, j, ns, j, j, j))}
		}
		for j := range scalePods {
			work <- item{podGVR, mustObject(fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: web-%02d-5d4f8-%02d
  namespace: %s
  labels: {app: web-%02d}
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: web-%02d-5d4f8, uid: 00000000-0000-0000-0000-0000000000%02d, controller: true}]
spec:
  containers: [{name: web, image: "nginx:1.27", ports: [{containerPort: 80}], resources: {requests: {cpu: 10m, memory: 16Mi}}}]
`, j%3, j, ns, j%3, j%3, j%3))}
		}
		if n%100 == 99 {
			t.Logf("seeding: %d namespaces queued in %s", n+1, time.Since(start).Round(time.Second))
		}
	}
	wait()
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	t.Logf("seeded %d objects in %s", namespaces*(scaleConfigMaps+scaleDeployments+scalePods), time.Since(start).Round(time.Second))
}

// scaleSettings are the benchmark's knobs, from the environment:
// MUTATIS_E2E_AUDIT_SCALE_NAMESPACES seeds fewer namespaces (a cheaper run
// on a shared machine: 200 are 20,000 objects); MUTATIS_E2E_AUDIT_SCALE_BASELINE
// names another mutatis binary (e.g. built from main) audited in turns with
// this tree's on the same seeded cluster, MUTATIS_E2E_AUDIT_SCALE_RUNS times
// each (default 1); MUTATIS_E2E_AUDIT_SCALE_ENV adds KEY=VALUE pairs
// (comma-separated) to the environment of the audit processes alone (the
// API server's stays as it is), e.g. GOGC=100; MUTATIS_E2E_AUDIT_SCALE_ARGS
// adds flags (space-separated) to this tree's audit alone (the baseline
// may not know them), e.g. --disable-compression.
type scaleSettings struct {
	namespaces, runs int
	baseline         string
	env, args        []string
}

func scaleSettingsFromEnv(t *testing.T) scaleSettings {
	t.Helper()
	s := scaleSettings{namespaces: scaleDefaultNamespaces, runs: 1, baseline: os.Getenv("MUTATIS_E2E_AUDIT_SCALE_BASELINE")}
	for name, p := range map[string]*int{"MUTATIS_E2E_AUDIT_SCALE_NAMESPACES": &s.namespaces, "MUTATIS_E2E_AUDIT_SCALE_RUNS": &s.runs} {
		if v := os.Getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				t.Fatalf("%s=%q: want a positive number", name, v)
			}
			*p = n
		}
	}
	s.args = strings.Fields(os.Getenv("MUTATIS_E2E_AUDIT_SCALE_ARGS"))
	if v := os.Getenv("MUTATIS_E2E_AUDIT_SCALE_ENV"); v != "" {
		for _, kv := range strings.Split(v, ",") {
			if !strings.Contains(kv, "=") {
				t.Fatalf("MUTATIS_E2E_AUDIT_SCALE_ENV: %q is not KEY=VALUE", kv)
			}
			s.env = append(s.env, kv)
		}
	}
	return s
}

// processCPU is the user+system CPU time pid has used (/proc/PID/stat,
// in clock ticks of 10 ms: USER_HZ is 100 on Linux).
func processCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// The fields after the command name, which is in parentheses: state
	// is the first, utime the 12th and stime the 13th.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			t.Fatalf("/proc/%d/stat: %v", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// scaleRun is one audit of the benchmark.
type scaleRun struct {
	objects, findings int64
	wall, cpu         time.Duration
	rssMiB            int64
	// apiserverCPU is the API server's CPU time during the audit.
	apiserverCPU time.Duration
}

// auditScale runs bin's audit of the seeded cluster.
func auditScale(t *testing.T, ctx context.Context, c *Cluster, bin, policies, dir string, env, args []string) scaleRun {
	t.Helper()
	kubeconfig := c.Kubeconfig
	apiserver := c.apiserver.cmd.Process.Pid
	apiserverBefore := processCPU(t, apiserver)
	report := filepath.Join(dir, "audit.json")
	cmd := exec.CommandContext(ctx, bin, append([]string{"audit", "--kubeconfig", kubeconfig, "--policies", policies,
		"--disable-admission-plugins", strings.Join(harnessDisabledPlugins, ","), "-o", "json", "--report", report}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	// The audit's own peak resident set: wait4's ru_maxrss is not it
	// alone. os/exec starts the child with vfork (CLONE_VM), and Linux's
	// exec records the high-water mark of the memory it leaves, this test
	// process's, into the child's maxrss: once this process has grown
	// past the audit (it seeded 100,000 objects and reads every report),
	// ru_maxrss is this process's peak. /proc/PID/status's VmHWM is the
	// audit's own memory's, read every 10 ms while it runs (peakRSS).
	parentHWM, err := load.ProcessPeakRSS(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	followed := followPeakRSS(cmd.Process.Pid)
	err = cmd.Wait()
	elapsed := time.Since(start)
	polled := followed()
	apiserverCPU := processCPU(t, apiserver) - apiserverBefore
	if err != nil {
		t.Fatalf("%s audit: %v\n%s", bin, err, stderr.String())
	}
	var rep struct {
		Summary struct {
			Objects  int64            `json:"objects"`
			Outcomes map[string]int64 `json:"outcomes"`
		} `json:"summary"`
		Findings []json.RawMessage `json:"findings"`
	}
	data, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", strings.TrimSpace(stderr.String()))
	return scaleRun{
		objects: rep.Summary.Objects, findings: int64(len(rep.Findings)), wall: elapsed,
		cpu:          cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(),
		rssMiB:       auditPeakRSS(cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss<<10, parentHWM, polled) >> 20,
		apiserverCPU: apiserverCPU,
	}
}

// TestAuditScale is the benchmark of docs/performance.md ("mutatis
// audit"): `mutatis audit` (a binary built without -race) over a real
// kube-apiserver holding 100,000 objects in 1,000 namespaces with 20
// policies must audit them all with less than 500 MB resident; its wall
// and CPU time are reported against the 60 s.
// Opt-in (it seeds for minutes): MUTATIS_E2E_AUDIT_SCALE=1; knobs in
// scaleSettings.
func TestAuditScale(t *testing.T) {
	if os.Getenv("MUTATIS_E2E_AUDIT_SCALE") != "1" {
		t.Skip("the 100,000-object audit benchmark runs with MUTATIS_E2E_AUDIT_SCALE=1")
	}
	settings := scaleSettingsFromEnv(t)
	c := StartCluster(t, NativeMAP)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Minute)
	defer cancel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "mutatis")
	build := exec.Command("go", "build", "-o", bin, "./cmd/mutatis")
	build.Dir = repoRoot(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	policies := scalePolicies(t, dir)
	seedScale(t, ctx, c.Config, settings.namespaces)

	type binary struct {
		name, path string
		args       []string
	}
	binaries := []binary{{"this tree", bin, settings.args}}
	if settings.baseline != "" {
		binaries = append([]binary{{"baseline", settings.baseline, nil}}, binaries...)
	}
	want := int64(settings.namespaces * (scaleConfigMaps + scaleDeployments + scalePods))
	for run := range settings.runs {
		for _, b := range binaries {
			r := auditScale(t, ctx, c, b.path, policies, dir, settings.env, b.args)
			t.Logf("run %d, %s: audit of %d objects: %.1f s wall, %.1f s CPU (API server %.1f s), %.0f objects/s, %d MiB max RSS, %d findings",
				run+1, b.name, r.objects, r.wall.Seconds(), r.cpu.Seconds(), r.apiserverCPU.Seconds(), float64(r.objects)/r.wall.Seconds(), r.rssMiB, r.findings)
			if r.objects < want {
				t.Errorf("%s: %d objects audited, want at least %d", b.name, r.objects, want)
			}
			// Timed assertions never appear in tests (docs/performance.md):
			// the wall time depends on what else the machine runs, and is
			// reported.
			if settings.namespaces == scaleDefaultNamespaces && r.wall > scaleMaxSeconds*time.Second {
				t.Logf("NOTE: the audit took %s, above the issue's %d s", r.wall.Round(time.Second), scaleMaxSeconds)
			}
			if r.rssMiB > scaleMaxRSSMB {
				t.Errorf("%s: the audit's resident set reached %d MiB, more than %d", b.name, r.rssMiB, scaleMaxRSSMB)
			}
		}
	}
}

// followPeakRSS reads the VmHWM of process pid every 10 ms until the
// function it returns is called (after the process has ended), which
// returns the largest read, in bytes (0 if none).
func followPeakRSS(pid int) func() int64 {
	var peak int64
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			if v, err := load.ProcessPeakRSS(pid); err == nil && v > peak {
				peak = v
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	return func() int64 {
		close(stop)
		<-done
		return peak
	}
}

// auditPeakRSS is an audit's own peak resident set, in bytes, from
// wait4's maxrss, the test process's VmHWM just before the audit started
// (parentHWM) and the audit's VmHWM as last read while it ran (polled).
// maxrss is the larger of the audit's own peak and the test process's
// high-water mark when the audit was exec'd: above parentHWM it is the
// audit's own, exactly; otherwise the audit's peak is polled (read at
// most 10 ms before its end).
func auditPeakRSS(maxrss, parentHWM, polled int64) int64 {
	if maxrss > parentHWM {
		return maxrss
	}
	return polled
}

// TestAuditPeakRSS holds the reading of an audit's peak resident set: wait4's
// maxrss when it is over the test process's high-water mark at the start,
// else the VmHWM followed while the audit ran; and followPeakRSS reads a
// live process's VmHWM. It needs no cluster.
func TestAuditPeakRSS(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		name                      string
		maxrss, parentHWM, polled int64
		want                      int64
	}{
		{"the audit grew past the test process", 400 * mib, 300 * mib, 399 * mib, 400 * mib},
		{"the test process's mark carried over exec", 520 * mib, 520 * mib, 330 * mib, 330 * mib},
		{"the test process's mark, not reached", 520 * mib, 530 * mib, 330 * mib, 330 * mib},
	} {
		if got := auditPeakRSS(c.maxrss, c.parentHWM, c.polled); got != c.want {
			t.Errorf("%s: %d MiB, want %d MiB", c.name, got/mib, c.want/mib)
		}
	}
	if got := followPeakRSS(os.Getpid())(); got <= 0 {
		t.Errorf("followPeakRSS of this process: %d bytes", got)
	}
}
