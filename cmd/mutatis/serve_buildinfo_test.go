package main

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mutatis-dev/mutatis/internal/buildinfo"
	"github.com/mutatis-dev/mutatis/webhook/certs"
)

func TestServeExportsBuildInfo(t *testing.T) {
	certDir := filepath.Join(t.TempDir(), "certs")
	addr, stderr, stop := startServe(t, "--policies", "../../examples", "--self-signed-dir", certDir,
		"--listen", "127.0.0.1:0", "--reload-interval", "0")
	defer stop()
	info := buildinfo.Read()

	if want := "msg=mutatis version=" + info.Version; !strings.Contains(stderr.String(), want) {
		t.Errorf("serve does not log its build at start (%q):\n%s", want, stderr)
	}
	if want := "kubernetes=" + goModKubernetes(t); !strings.Contains(stderr.String(), want) {
		t.Errorf("the start log lacks %q:\n%s", want, stderr)
	}

	pool, err := certs.LoadPool(filepath.Join(certDir, certs.CACertFile))
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, "https://"+addr+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	want := `mutatis_build_info{goversion="` + info.GoVersion + `",kubernetes="` + goModKubernetes(t) +
		`",revision="` + info.Commit + `",version="` + info.Version + `"} 1`
	if !strings.Contains(string(body), want+"\n") {
		t.Errorf("/metrics lacks %s:\n%s", want, grepLines(string(body), "build_info"))
	}
	if !strings.Contains(string(body), "# TYPE mutatis_build_info gauge") {
		t.Errorf("mutatis_build_info is not a gauge")
	}
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
