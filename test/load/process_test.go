package load

import (
	"context"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestParseStatCPUCountsFieldsAfterTheCommandName(t *testing.T) {
	// utime 250 and stime 50 ticks; a command name with spaces and ')'.
	line := "4242 (mutatis (x) y) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 9 0 123 456 789\n"
	got, err := parseStatCPU([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if want := 3 * time.Second; got != want {
		t.Errorf("parseStatCPU = %v, want %v", got, want)
	}
	for _, bad := range []string{"4242 no parenthesis", "4242 (x) S 1 2"} {
		if _, err := parseStatCPU([]byte(bad)); err == nil {
			t.Errorf("parseStatCPU(%q) did not fail", bad)
		}
	}
}

func TestProcessCPUReadsThisProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	deadline := time.Now().Add(time.Second)
	for x := 0; time.Now().Before(deadline); x++ { // spend some CPU
		_ = x * x
	}
	d, err := ProcessCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if d <= 0 {
		t.Errorf("ProcessCPU of this process = %v after a second of work", d)
	}
}

func TestStartProcessReportsAServerThatExits(t *testing.T) {
	if _, err := os.Stat("/bin/false"); err != nil {
		t.Skip("no /bin/false")
	}
	_, err := StartProcess(context.Background(), ProcessOptions{Binary: "/bin/false", CertDir: t.TempDir(), Ready: time.Minute})
	if err == nil || !strings.Contains(err.Error(), "exited before it was ready") || !strings.Contains(err.Error(), "/bin/false serve --self-signed-dir") {
		t.Errorf("StartProcess of /bin/false: %v", err)
	}
	if _, err := StartProcess(context.Background(), ProcessOptions{CertDir: t.TempDir()}); err == nil {
		t.Error("StartProcess without a binary did not fail")
	}
}

func TestReportShowsTheServersCPUApart(t *testing.T) {
	s := Summary{Plan: Plan{Rate: 1000, Duration: time.Second}, Sent: 1000, OK: 1000, Achieved: 1000,
		CPUPerOK: 120 * time.Microsecond, ServerCPUPerOK: 840 * time.Microsecond}
	md := Report{Command: "make load", Runs: []Summary{s}}.Markdown()
	for _, want := range []string{"| server CPU per ok | generator CPU per ok |", "| 0.84 ms | 0.12 ms |"} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %q:\n%s", want, md)
		}
	}
	s.ServerCPUPerOK = 0
	md = Report{Command: "make load", Runs: []Summary{s}}.Markdown()
	if strings.Contains(md, "server CPU") || !strings.Contains(md, "| CPU per ok |\n") {
		t.Errorf("in process, the report has one CPU column:\n%s", md)
	}
}

func TestParseStatusHWM(t *testing.T) {
	got, err := parseStatusHWM([]byte("Name:\tmutatis\nVmPeak:\t  900000 kB\nVmHWM:\t   81234 kB\nVmRSS:\t   80000 kB\n"))
	if err != nil || got != 81234<<10 {
		t.Errorf("parseStatusHWM = %d, %v; want %d", got, err, 81234<<10)
	}
	for _, bad := range []string{"VmRSS:\t 1 kB\n", "VmHWM:\t 12 MB\n", "VmHWM:\t x kB\n", ""} {
		if _, err := parseStatusHWM([]byte(bad)); err == nil {
			t.Errorf("parseStatusHWM(%q) did not fail", bad)
		}
	}
	if rss, err := ProcessPeakRSS(os.Getpid()); runtime.GOOS == "linux" && (err != nil || rss <= 0) {
		t.Errorf("ProcessPeakRSS of this process: %d, %v", rss, err)
	}
}

func TestReportShowsTheServersPeakRSS(t *testing.T) {
	s := Summary{Plan: Plan{Rate: 1000, Duration: time.Second}, Sent: 1000, OK: 1000, Achieved: 1000,
		CPUPerOK: 120 * time.Microsecond, ServerCPUPerOK: 840 * time.Microsecond, ServerPeakRSS: 95 << 20}
	md := Report{Command: "make load", Runs: []Summary{s}}.Markdown()
	for _, want := range []string{"| generator CPU per ok | server peak RSS |", "| 0.84 ms | 0.12 ms | 95 MiB |"} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %q:\n%s", want, md)
		}
	}
}
