package audit

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// fixedReport is the tests' audit with its time set to zero, for golden
// files.
func fixedReport(t *testing.T) *Report {
	rep, _ := runAudit(t, nil)
	rep.Summary.Seconds = 0
	return rep
}

func TestReportFormats(t *testing.T) {
	rep := fixedReport(t)
	formats := []struct {
		name  string
		write func(*bytes.Buffer) error
		check func(t *testing.T, out []byte)
	}{
		{"table.txt", func(b *bytes.Buffer) error { return rep.WriteTable(b) }, nil},
		{"report.json", func(b *bytes.Buffer) error { return rep.WriteJSON(b) }, func(t *testing.T, out []byte) {
			var back struct {
				Summary  Summary
				Findings []map[string]any
			}
			if err := json.Unmarshal(out, &back); err != nil {
				t.Fatal(err)
			}
			if back.Summary.Objects != 11 || len(back.Findings) != len(rep.Findings) {
				t.Errorf("round trip: %+v", back.Summary)
			}
			// The patch is JSON, not a string holding JSON.
			for _, f := range back.Findings {
				if p, ok := f["patch"]; ok {
					if _, isList := p.([]any); !isList {
						t.Errorf("patch of %v is %T", f["name"], p)
					}
				}
			}
		}},
		{"junit.xml", func(b *bytes.Buffer) error { return rep.WriteJUnit(b, nil) }, func(t *testing.T, out []byte) {
			var back struct {
				Tests    int `xml:"tests,attr"`
				Failures int `xml:"failures,attr"`
			}
			if err := xml.Unmarshal(out, &back); err != nil {
				t.Fatal(err)
			}
			// deny and invalid fail by default; change and ignored do not.
			if back.Tests != len(rep.Findings) || back.Failures != 2 {
				t.Errorf("tests %d failures %d", back.Tests, back.Failures)
			}
		}},
		{"report.html", func(b *bytes.Buffer) error { return rep.WriteHTML(b) }, func(t *testing.T, out []byte) {
			// Self-contained: nothing is loaded from elsewhere.
			if m := regexp.MustCompile(`(?i)(src|href)=|@import|url\(`).Find(out); m != nil {
				t.Errorf("the page loads something: %s", m)
			}
		}},
	}
	for _, f := range formats {
		t.Run(f.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := f.write(&b); err != nil {
				t.Fatal(err)
			}
			golden(t, f.name, b.String())
			if f.check != nil {
				f.check(t, b.Bytes())
			}
		})
	}
}

func TestJUnitFailOn(t *testing.T) {
	rep := fixedReport(t)
	cases := []struct {
		failOn   []string
		failures int
		failed   bool
	}{
		{nil, 2, false},
		{[]string{"change"}, 4, true}, // settings, web, lonely, the ReplicaSet's pods
		{[]string{"deny"}, 2, true},
		{[]string{"error"}, 1, true}, // ignore-me: an error ignored
	}
	for _, c := range cases {
		t.Run(strings.Join(c.failOn, ","), func(t *testing.T) {
			fail, err := ParseFailOn(c.failOn)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := rep.WriteJUnit(&b, fail); err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(b.String(), "<failure "); n != c.failures {
				t.Errorf("%d failures, want %d", n, c.failures)
			}
			if fail.Failed(rep) != c.failed {
				t.Errorf("Failed = %v", !c.failed)
			}
		})
	}
	if _, err := ParseFailOn([]string{"warn"}); err == nil || err.Error() != `--fail-on must be change, deny, error or validation, not "warn"` {
		t.Errorf("err = %v", err)
	}
}

// browser finds a headless Chromium, or skips.
func browser(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no Chromium on PATH (Debian: apt-get install chromium)")
	return ""
}

// TestHTMLInBrowser renders the HTML report in headless Chromium with
// filters given in the address and reads back which rows the page's
// script shows.
func TestHTMLInBrowser(t *testing.T) {
	chrome := browser(t)
	rep := fixedReport(t)
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	var b bytes.Buffer
	if err := rep.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(page, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		hash  string
		shown []string // names of the visible rows
	}{
		{"", []string{"broken", "too-long", "settings", "web", "lonely", "web-7d9c5-pod1", "ignore-me"}},
		{"#outcome=deny", []string{"broken"}},
		{"#outcome=deny,invalid", []string{"broken", "too-long"}},
		{"#outcome=change&q=pods", []string{"lonely", "web-7d9c5-pod1"}},
		{"#q=audited-label", []string{"settings", "web"}},
		{"#q=team-a%20seen", []string{"lonely", "web-7d9c5-pod1"}},
	}
	row := regexp.MustCompile(`<tr class="finding"([^>]*)>\s*<td[^>]*>[^<]*</td><td>[^<]*</td><td>([^<]*)</td>`)
	for _, c := range cases {
		t.Run("filter "+c.hash, func(t *testing.T) {
			out, err := runBrowser(chrome, dir, "file://"+page+c.hash)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			var shown []string
			rows := row.FindAllStringSubmatch(string(out), -1)
			if len(rows) != len(rep.Findings) {
				t.Fatalf("%d rows rendered, want %d:\n%s", len(rows), len(rep.Findings), out)
			}
			for _, m := range rows {
				if !strings.Contains(m[1], " hidden") {
					shown = append(shown, nameOf(m[2]))
				}
			}
			if strings.Join(shown, " ") != strings.Join(c.shown, " ") {
				t.Errorf("shown %v, want %v", shown, c.shown)
			}
			if !strings.Contains(string(out), fmt.Sprintf(`data-shown="%d"`, len(c.shown))) {
				t.Errorf("the count of shown rows is not %d", len(c.shown))
			}
		})
	}
}

// nameOf is the object's name in the object column: namespace/name, or
// the first pod's name for an owner's group.
func nameOf(object string) string {
	if strings.Contains(object, "ReplicaSet/") {
		return "web-7d9c5-pod1"
	}
	return object[strings.LastIndex(object, "/")+1:]
}

// runBrowser prints the DOM of url after its scripts ran, bounded in time.
func runBrowser(chrome, dir, url string) ([]byte, error) {
	cmd := exec.Command(chrome, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--virtual-time-budget=2000", "--dump-dom", url)
	cmd.Env = append(os.Environ(), "HOME="+dir)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return stderr.Bytes(), err
		}
		return stdout.Bytes(), nil
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		return stderr.Bytes(), os.ErrDeadlineExceeded
	}
}
