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

// TestReportSaysWhetherThePeakRSSStayedUnderTheLimit: with the server's
// memory limit, the report says whether the largest peak resident set of
// its runs stayed under it, and OverMemoryLimit fails a run past it.
func TestReportSaysWhetherThePeakRSSStayedUnderTheLimit(t *testing.T) {
	run := func(rate float64, rss int64) Summary {
		return Summary{Plan: Plan{Rate: rate, Duration: time.Second}, Sent: 10, OK: 10, Achieved: 10,
			CPUPerOK: time.Millisecond, ServerCPUPerOK: time.Millisecond, ServerPeakRSS: rss}
	}
	for _, tc := range []struct {
		name  string
		r     Report
		want  string
		over  bool
		count int
	}{
		{"under", Report{MemoryLimit: 512 << 20, Runs: []Summary{run(500, 220<<20), run(1000, 359<<20)}},
			"Server peak RSS 359 MiB, under its memory limit of 512 MiB.", false, 1},
		{"over", Report{MemoryLimit: 512 << 20, Runs: []Summary{run(500, 220<<20), run(2000, 513<<20)}},
			"Server peak RSS 513 MiB, over its memory limit of 512 MiB.", true, 1},
		{"no limit", Report{Runs: []Summary{run(500, 220<<20)}}, "its memory limit of", false, 0},
		{"not measured", Report{MemoryLimit: 512 << 20, Runs: []Summary{run(500, 0)}}, "its memory limit of", false, 0},
	} {
		md := tc.r.Markdown()
		if got := strings.Count(md, tc.want); got != tc.count {
			t.Errorf("%s: %q %d times, want %d:\n%s", tc.name, tc.want, got, tc.count, md)
		}
		if got := tc.r.OverMemoryLimit(); got != tc.over {
			t.Errorf("%s: OverMemoryLimit %v, want %v", tc.name, got, tc.over)
		}
	}
}

// TestReportCountsTheGeneratorsDials: the connections dialed during each
// run are reported when they were counted (a storm shows as more than 0).
func TestReportCountsTheGeneratorsDials(t *testing.T) {
	runs := []Summary{
		{Plan: Plan{Rate: 1000, Duration: time.Second}, Sent: 10, OK: 10, DialsCounted: true},
		{Plan: Plan{Rate: 2000, Duration: time.Second}, Sent: 10, OK: 10, Dials: 1202, DialsCounted: true},
	}
	md := Report{Runs: runs}.Markdown()
	if want := "during each run (beyond the warm-up's, which carries every request while the server's HTTP/2 stream limit allows): 1,000 rps: 0; 2,000 rps: 1,202."; !strings.Contains(md, want) {
		t.Errorf("the report lacks %q:\n%s", want, md)
	}
	runs[0].DialsCounted, runs[1].DialsCounted = false, false
	if md := (Report{Runs: runs}).Markdown(); strings.Contains(md, "dialed") {
		t.Errorf("dials reported though not counted:\n%s", md)
	}
}
