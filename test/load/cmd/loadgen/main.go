// Command loadgen sends AdmissionReviews to a mutatis webhook at fixed
// rates over loopback TLS and reports the latency percentiles (package
// test/load). By default it serves test/load/testdata/policies in process,
// as `mutatis serve --policies DIR --self-signed-dir DIR` would; with
// --serve-binary it starts that `mutatis serve` as its own process (what
// `make load` does) and reports the server's CPU apart from its own; with
// --server it measures a webhook running elsewhere (its CPU too, given
// --server-pid).
//
//	go run ./test/load/cmd/loadgen [--rates 500,1000,2000] [--duration 20s]
//	    [--policies DIR [--serve-binary bin/mutatis] | --server URL --ca FILE [--server-pid PID]] [--object FILE]
//	    [--out FILE] [--doc docs/performance.md] [--command "make load"] [--note "…"]
//
// The table goes to stdout; --out writes it to a file and --doc replaces
// the text between "<!-- loadgen:begin -->" and "<!-- loadgen:end -->".
// Errors (failed requests) are part of the measurement: the exit status
// is 0 once the report is written, unless --fail-on-errors (errors, or
// the server's peak resident set over its --server-memory-limit); 2 when
// the run could not be made.
package main

import (
	"context"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/mutatis-dev/mutatis/test/load"
	"github.com/mutatis-dev/mutatis/webhook/certs"
)

type options struct {
	rates          []float64
	duration       time.Duration
	warmup         time.Duration
	pause          time.Duration
	policies       string
	resources      string
	object         string
	server         string
	ca             string
	serveBinary    string
	serverPid      int
	expectPolicies int
	maxInFlight    int
	timeout        time.Duration
	target         time.Duration
	out            string
	doc            string
	command        string
	note           string
	cpuProfile     string
	serverProfile  string
	serverMemory   string
	gogc           int
	failOnErrors   bool
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(2)
	}
	// The generator shares the machine with the server it measures: its
	// own collections are CPU the server does not get.
	debug.SetGCPercent(o.gogc)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	failed, err := run(ctx, o, os.Stdout, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(2)
	}
	if failed && o.failOnErrors {
		os.Exit(1)
	}
}

func parseFlags(args []string) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	rates := fs.String("rates", "500,1000,2000", "comma-separated request rates (requests per second), run in order")
	fs.DurationVar(&o.duration, "duration", 20*time.Second, "how long each rate is sent")
	fs.DurationVar(&o.warmup, "warmup", 2*time.Second, "a run at the first rate before the measured ones, not reported (0: none)")
	fs.DurationVar(&o.pause, "pause", time.Second, "idle time between runs")
	fs.StringVar(&o.policies, "policies", "test/load/testdata/policies", "in-process webhook: comma-separated files or directories of policies and bindings (mutatis serve --policies)")
	fs.StringVar(&o.resources, "resources", "", "in-process webhook: comma-separated files or directories of other objects (mutatis serve --resources)")
	fs.StringVar(&o.object, "object", "test/load/testdata/pod.yaml", "the object every request creates")
	fs.StringVar(&o.server, "server", "", "measure this webhook (https://HOST:PORT[/mutate]) instead of serving --policies in process")
	fs.StringVar(&o.ca, "ca", "", "with --server: the CA certificate that signed its serving certificate")
	fs.StringVar(&o.serveBinary, "serve-binary", "", "run the webhook as its own process: this mutatis binary's `serve --policies … --self-signed-dir …`, its CPU reported apart from the generator's")
	fs.IntVar(&o.serverPid, "server-pid", 0, "with --server: the server's process id on this machine, to report its CPU apart (/proc/PID/stat)")
	fs.IntVar(&o.expectPolicies, "expect-policies", 20, "invocations every answer's \"policies\" audit annotation must list (0: do not check)")
	fs.IntVar(&o.maxInFlight, "max-in-flight", load.DefaultMaxInFlight, "requests outstanding at most; one due beyond that counts as an error")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Second, "deadline of each request (sent as ?timeout=, as kube-apiserver does)")
	fs.DurationVar(&o.target, "target", 2*time.Millisecond, "the p99 latency the highest rate should stay under, for the report (0: none)")
	fs.StringVar(&o.out, "out", "", "write the Markdown report to this file")
	fs.StringVar(&o.doc, "doc", "", "replace the "+load.BeginMarker+" section of this Markdown file with the report")
	fs.StringVar(&o.command, "command", "", "the command shown in the report (default: this one)")
	fs.StringVar(&o.note, "note", "", "a note on the conditions of the run, shown in the report")
	fs.BoolVar(&o.failOnErrors, "fail-on-errors", false, "exit with status 1 when a run had errors or the server's peak resident set exceeded its memory limit")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the measured runs to this file (in process: server and generator)")
	fs.StringVar(&o.serverProfile, "server-cpuprofile", "", "with --serve-binary: the server writes a CPU profile of its whole run (warm-up included) to this file (mutatis serve --cpuprofile)")
	fs.StringVar(&o.serverMemory, "server-memory-limit", DeploymentMemoryLimit, "with --serve-binary: the server's --memory-limit, as the deployment gives it its container's limit (its soft limit and GOGC follow from it; empty: none)")
	fs.IntVar(&o.gogc, "gogc", DefaultGOGC, "the generator's own GOGC (its live heap is small: collecting less often leaves more CPU to the server; negative: never)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	for _, r := range strings.Split(*rates, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(r), 64)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("--rates: %q is not a positive number", r)
		}
		o.rates = append(o.rates, v)
	}
	switch {
	case o.duration <= 0:
		return nil, errors.New("--duration must be positive")
	case o.server == "" && o.ca != "":
		return nil, errors.New("--ca goes with --server")
	case o.server != "" && o.ca == "":
		return nil, errors.New("--server needs --ca (the certificate is verified)")
	case o.server != "" && o.serveBinary != "":
		return nil, errors.New("--serve-binary starts the server; it excludes --server")
	case o.serverProfile != "" && o.serveBinary == "":
		return nil, errors.New("--server-cpuprofile goes with --serve-binary")
	case o.serverPid != 0 && o.server == "":
		return nil, errors.New("--server-pid goes with --server")
	}
	if o.command == "" {
		o.command = strings.TrimSpace("go run ./test/load/cmd/loadgen " + strings.Join(args, " "))
	}
	return o, nil
}

// run measures every rate; failed is true when a run had errors or the
// server's peak resident set exceeded its memory limit.
func run(ctx context.Context, o *options, stdout, stderr io.Writer) (failed bool, err error) {
	machine := load.ReadMachine() // the load average before we add ours
	url, setup := o.server, ""
	var roots *x509.CertPool
	serverPid := o.serverPid
	switch {
	case o.serveBinary != "":
		// derr, not err: the deferred Close reports into run's err.
		dir, derr := os.MkdirTemp("", "loadgen-certs-")
		if derr != nil {
			return false, derr
		}
		defer os.RemoveAll(dir)
		po := load.ProcessOptions{Binary: o.serveBinary, Policies: split(o.policies), Resources: split(o.resources), CertDir: dir}
		if o.serverMemory != "" {
			po.Args = append(po.Args, "--memory-limit", o.serverMemory)
		}
		if o.serverProfile != "" {
			po.Args = append(po.Args, "--cpuprofile", o.serverProfile)
		}
		proc, derr := load.StartProcess(ctx, po)
		if derr != nil {
			return false, derr
		}
		defer func() {
			if cerr := proc.Close(); cerr != nil && err == nil {
				err = fmt.Errorf("the server: %w\n%s", cerr, proc.Log())
			}
		}()
		url, roots, serverPid = proc.URL, proc.Roots, proc.Pid
		setup = fmt.Sprintf("`mutatis serve` as its own process (`%s`, GOMAXPROCS its default), the generator in another (this one); both share the %d cores. The server's CPU (from /proc/PID/stat) is reported apart from the generator's.",
			strings.Join(proc.Args, " "), machine.CPUs)
	case o.server == "":
		dir, derr := os.MkdirTemp("", "loadgen-certs-")
		if derr != nil {
			return false, derr
		}
		defer os.RemoveAll(dir)
		srv, derr := load.StartServer(ctx, load.ServerOptions{Policies: split(o.policies), Resources: split(o.resources), CertDir: dir})
		if derr != nil {
			return false, derr
		}
		defer func() {
			if cerr := srv.Close(); cerr != nil && err == nil {
				err = cerr
			}
		}()
		url, roots = srv.URL, srv.Roots
		setup = fmt.Sprintf("In-process webhook serving `%s` (%s) as `mutatis serve --policies … --self-signed-dir …` does; the generator runs in the same process, so both share the %d cores (GOMAXPROCS %d).",
			o.policies, srv.Summary, machine.CPUs, machine.GOMAXPROCS)
	default:
		if roots, err = certs.LoadPool(o.ca); err != nil {
			return false, fmt.Errorf("--ca: %w", err)
		}
		setup = fmt.Sprintf("Webhook at `%s`, CA `%s`.", o.server, o.ca)
		if serverPid != 0 {
			setup += fmt.Sprintf(" Its CPU (process %d, /proc/PID/stat) is reported apart from the generator's.", serverPid)
		}
	}
	obj, err := load.ReadObject(ctx, o.object)
	if err != nil {
		return false, err
	}
	reviews, err := load.NewReviews(obj, nil)
	if err != nil {
		return false, err
	}
	client := load.NewClient(roots, o.timeout)
	defer client.CloseIdleConnections()
	dials := load.CountDials(client)
	target := &load.Target{URL: url, Client: client, Reviews: reviews, Expect: load.Expect{Policies: o.expectPolicies}, Timeout: o.timeout}
	probe, err := target.Probe(ctx)
	if err != nil {
		return false, fmt.Errorf("the first request: %w", err)
	}
	setup += fmt.Sprintf(" Every request is a CREATE of `%s` by the ReplicaSet controller (a %d-byte AdmissionReview, a new uid each), answered with a %d-operation JSON patch from %d policy invocations (a %d-byte AdmissionReview); %s over loopback %s, the CA verified, multiplexed on one connection (another only past the server's stream limit). Every answer is checked: allowed, the uid echoed, a JSON patch, %d invocations, no ignored errors.",
		o.object, probe.RequestBytes, probe.PatchOperations, probe.Policies, probe.AnswerBytes, probe.Proto, probe.TLSVersion, o.expectPolicies)
	fmt.Fprintf(stderr, "loadgen: %s\nloadgen: %s\n", machine, setup)

	if o.warmup > 0 {
		s, err := measure(ctx, target, dials, serverPid, load.Plan{Rate: o.rates[0], Duration: o.warmup, MaxInFlight: o.maxInFlight})
		if err != nil {
			return false, err
		}
		fmt.Fprintf(stderr, "loadgen: warm-up: %s\n", line(s))
	}
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return false, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return false, err
		}
		defer pprof.StopCPUProfile()
	}
	rep := load.Report{Command: o.command, Setup: setup, Note: o.note, Machine: machine, When: time.Now(), Target: o.target}
	if o.serveBinary != "" && o.serverMemory != "" {
		// StartProcess succeeded: the server parsed the same quantity.
		if q, err := resource.ParseQuantity(o.serverMemory); err == nil {
			rep.MemoryLimit = q.Value()
		}
	}
	for i, rate := range o.rates {
		if i > 0 || o.warmup > 0 {
			if err := sleep(ctx, o.pause); err != nil {
				return false, err
			}
		}
		s, err := measure(ctx, target, dials, serverPid, load.Plan{Rate: rate, Duration: o.duration, MaxInFlight: o.maxInFlight})
		if err != nil {
			return false, err
		}
		fmt.Fprintf(stderr, "loadgen: %s\n", line(s))
		for _, e := range s.FirstErrors {
			fmt.Fprintf(stderr, "loadgen:   error: %s\n", e)
		}
		failed = failed || s.Errors > 0
		rep.Runs = append(rep.Runs, s)
	}
	// The deployment's container is killed past its limit: a failure as
	// much as an error answer.
	failed = failed || rep.OverMemoryLimit()
	md := rep.Markdown()
	if _, err := io.WriteString(stdout, md); err != nil {
		return failed, err
	}
	if o.out != "" {
		if err := os.WriteFile(o.out, []byte(md), 0o644); err != nil {
			return failed, err
		}
	}
	if o.doc != "" {
		doc, err := os.ReadFile(o.doc)
		if err != nil {
			return failed, err
		}
		updated, err := load.Splice(doc, md)
		if err != nil {
			return failed, fmt.Errorf("%s: %w", o.doc, err)
		}
		if err := os.WriteFile(o.doc, updated, 0o644); err != nil {
			return failed, err
		}
	}
	return failed, nil
}

// measure runs p against t after a garbage collection, so that each run
// starts from the same heap, and measures the process's CPU time, the
// connections dialed (with dials, CountDials' count) and, with a serverPid,
// the server process's CPU time and peak resident set.
func measure(ctx context.Context, t *load.Target, dials *atomic.Int64, serverPid int, p load.Plan) (load.Summary, error) {
	runtime.GC()
	cpu0, cpuOK := processCPU()
	server0, serverErr := serverCPU(serverPid)
	var dials0 int64
	if dials != nil {
		dials0 = dials.Load()
	}
	res, err := load.Run(ctx, p, t.Send)
	if err != nil {
		return load.Summary{}, err
	}
	s := res.Summarize()
	if dials != nil {
		s.Dials, s.DialsCounted = int(dials.Load()-dials0), true
	}
	if cpu1, ok := processCPU(); cpuOK && ok && s.OK > 0 {
		s.CPUPerOK = (cpu1 - cpu0) / time.Duration(s.OK)
	}
	if server1, err := serverCPU(serverPid); serverErr == nil && err == nil && serverPid != 0 && s.OK > 0 {
		s.ServerCPUPerOK = (server1 - server0) / time.Duration(s.OK)
	}
	if serverPid != 0 {
		if rss, err := load.ProcessPeakRSS(serverPid); err == nil {
			s.ServerPeakRSS = rss
		}
	}
	return s, nil
}

// serverCPU is the server process's CPU time (0 without a pid).
func serverCPU(pid int) (time.Duration, error) {
	if pid == 0 {
		return 0, nil
	}
	return load.ProcessCPU(pid)
}

// DefaultGOGC is --gogc's default: the generator's live heap is the
// run's samples and the requests in flight (a few MiB; tens with a
// thousand in flight), so letting it grow to 5× rather than 2× of that
// before a collection costs little memory and saves most collections.
const DefaultGOGC = 400

// DeploymentMemoryLimit is the container memory limit of deploy/base's
// Deployment (and the chart's default), which `mutatis serve` is given
// there as --memory-limit; --server-memory-limit's default.
const DeploymentMemoryLimit = "512Mi"

func line(s load.Summary) string {
	return fmt.Sprintf("%v rps for %v: sent %d, ok %d, errors %d, achieved %.0f rps, latency p50 %s p90 %s p99 %s max %s, service p50 %s p99 %s",
		s.Plan.Rate, s.Plan.Duration, s.Sent, s.OK, s.Errors, s.Achieved,
		load.Millis(s.Latency.P50), load.Millis(s.Latency.P90), load.Millis(s.Latency.P99), load.Millis(s.Latency.Max),
		load.Millis(s.Service.P50), load.Millis(s.Service.P99)) + cpuLine(s) + dialsLine(s)
}

func dialsLine(s load.Summary) string {
	if !s.DialsCounted {
		return ""
	}
	return fmt.Sprintf(", connections dialed %d", s.Dials)
}

func cpuLine(s load.Summary) string {
	if s.ServerCPUPerOK > 0 {
		return fmt.Sprintf(", server CPU per ok %s, generator CPU per ok %s, server peak RSS %d MiB", load.Millis(s.ServerCPUPerOK), load.Millis(s.CPUPerOK), s.ServerPeakRSS>>20)
	}
	return fmt.Sprintf(", CPU per ok %s", load.Millis(s.CPUPerOK))
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func split(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
