package load

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mutatis-dev/mutatis/webhook"
	"github.com/mutatis-dev/mutatis/webhook/certs"
)

// ProcessOptions configure a webhook run as its own process.
type ProcessOptions struct {
	// Binary is the mutatis executable (e.g. bin/mutatis of `make build`).
	Binary string
	// Policies and Resources are its --policies and --resources.
	Policies, Resources []string
	// CertDir is its --self-signed-dir (required).
	CertDir string
	// Args are more flags of its serve command (e.g. --cpuprofile FILE).
	Args []string
	// Ready bounds the wait for the server to answer /readyz (default
	// one minute: a loaded machine starts it slowly).
	Ready time.Duration
}

// Process is `mutatis serve` running as a child process.
type Process struct {
	// URL is the /mutate endpoint, https://127.0.0.1:PORT/mutate.
	URL string
	// Roots trust the serving certificate (the CA of CertDir).
	Roots *x509.CertPool
	// Pid is the child's process id (ProcessCPU reads its CPU time).
	Pid int
	// Args are the command line it runs.
	Args []string

	cmd    *exec.Cmd
	stderr *lockedBuffer
	exited chan struct{}
	err    error // cmd.Wait's, once exited is closed
}

// StartProcess starts `o.Binary serve --policies … --self-signed-dir
// CertDir --listen 127.0.0.1:PORT --reload-interval 0` on a free loopback
// port and returns once it answers /readyz over TLS with its CA. Close
// stops it.
func StartProcess(ctx context.Context, o ProcessOptions) (*Process, error) {
	if o.Binary == "" || o.CertDir == "" {
		return nil, errors.New("load: ProcessOptions.Binary and CertDir are required")
	}
	if o.Ready <= 0 {
		o.Ready = time.Minute
	}
	port, err := freePort(ctx)
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	args := []string{"serve", "--self-signed-dir", o.CertDir, "--listen", addr, "--reload-interval", "0"}
	if len(o.Policies) > 0 {
		args = append(args, "--policies", strings.Join(o.Policies, ","))
	}
	if len(o.Resources) > 0 {
		args = append(args, "--resources", strings.Join(o.Resources, ","))
	}
	args = append(args, o.Args...)
	p := &Process{URL: "https://" + addr + webhook.PathMutate, Args: append([]string{o.Binary}, args...),
		stderr: &lockedBuffer{}, exited: make(chan struct{})}
	// Not CommandContext: Close stops the child, gracefully.
	p.cmd = exec.Command(o.Binary, args...)
	p.cmd.Stdout, p.cmd.Stderr = p.stderr, p.stderr
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	p.Pid = p.cmd.Process.Pid
	go func() { p.err = p.cmd.Wait(); close(p.exited) }()
	if err := p.waitReady(ctx, certs.PathsIn(o.CertDir).CACert, o.Ready); err != nil {
		_ = p.Close()
		return nil, fmt.Errorf("%s: %w\n%s", strings.Join(p.Args, " "), err, p.stderr.String())
	}
	return p, nil
}

// waitReady polls /readyz until it answers 200 with the CA the server
// made, the child exits, or within passes.
func (p *Process) waitReady(ctx context.Context, caFile string, within time.Duration) error {
	deadline := time.Now().Add(within)
	readyz := strings.TrimSuffix(p.URL, webhook.PathMutate) + "/readyz"
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-p.exited:
			return fmt.Errorf("exited before it was ready: %v", p.err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if p.Roots == nil {
			roots, err := certs.LoadPool(caFile)
			if err != nil {
				last = err
				continue
			}
			p.Roots = roots
		}
		client := NewClient(p.Roots, 5*time.Second)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, readyz, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		client.CloseIdleConnections()
		if err != nil {
			last = err
			continue
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return nil
		}
		last = fmt.Errorf("/readyz: %s", resp.Status)
	}
	return fmt.Errorf("not ready after %s: %v", within, last)
}

// Log is what the child wrote on stdout and stderr so far.
func (p *Process) Log() string { return p.stderr.String() }

// Close stops the child as a shutdown would (SIGTERM; SIGKILL after 30
// seconds) and waits for it. Its exit status after SIGTERM is not an error.
func (p *Process) Close() error {
	select {
	case <-p.exited:
		return p.err
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return nil
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return errors.New("the server did not stop within 30 s of SIGTERM: killed")
	}
}

// freePort is a loopback TCP port free at the time of the call.
func freePort(ctx context.Context) (int, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// clockTicks is Linux's USER_HZ, the unit of /proc/PID/stat's times (100
// on every architecture Go supports).
const clockTicks = 100

// ProcessCPU is the CPU time (user and system, all threads) process pid
// has used, from /proc/PID/stat (Linux; an error elsewhere).
func ProcessCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStatCPU(data)
}

// ProcessPeakRSS is the largest resident set process pid has had, in
// bytes, from /proc/PID/status's VmHWM (Linux; an error elsewhere).
func ProcessPeakRSS(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	return parseStatusHWM(data)
}

// parseStatusHWM reads the "VmHWM:   1234 kB" line of /proc/PID/status.
func parseStatusHWM(data []byte) (int64, error) {
	for line := range bytes.Lines(data) {
		v, ok := bytes.CutPrefix(line, []byte("VmHWM:"))
		if !ok {
			continue
		}
		f := strings.Fields(string(v))
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("/proc/PID/status: VmHWM %q", bytes.TrimSpace(v))
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/PID/status: %w", err)
		}
		return kb << 10, nil
	}
	return 0, errors.New("/proc/PID/status: no VmHWM")
}

// parseStatCPU reads utime and stime (fields 14 and 15) of a
// /proc/PID/stat line; the command name (field 2) may hold spaces and
// parentheses, so the fields are counted after its last ')'.
func parseStatCPU(data []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, errors.New("/proc/PID/stat: no command name")
	}
	f := strings.Fields(string(data[i+1:]))
	// f[0] is field 3 (state): utime is f[11], stime f[12].
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/PID/stat: %d fields after the command name", len(f))
	}
	var ticks int64
	for _, s := range f[11:13] {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/PID/stat: %w", err)
		}
		ticks += v
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// lockedBuffer is a bytes.Buffer written by the child's output copiers
// and read by Log.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() > 1<<20 { // keep the start: where a failure shows
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
