package release

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
)

// The tests named TestDist check what `make dist` and `make image` wrote
// into $MUTATIS_DIST (`make release-test` sets it, as .ci/run does);
// without it they are skipped.

// platforms returns the platforms of the environment variable name (the
// Makefile's PLATFORMS or IMAGE_PLATFORMS, space-separated), or def.
func platforms(name string, def ...string) []string {
	if p := strings.Fields(os.Getenv(name)); len(p) > 0 {
		return p
	}
	return def
}

// distDir returns $MUTATIS_DIST and the release version, or skips.
func distDir(t *testing.T) (dir, version string) {
	t.Helper()
	dir = os.Getenv("MUTATIS_DIST")
	if dir == "" {
		t.Skip("MUTATIS_DIST is not set: run make dist image release-test")
	}
	version = os.Getenv("MUTATIS_VERSION")
	if version == "" {
		t.Fatal("MUTATIS_VERSION is not set")
	}
	return dir, version
}

// runVersion runs `binary version -o json` and checks what it says.
func runVersion(t *testing.T, binary, version string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, binary, "version", "-o", "json").Output()
	if err != nil {
		t.Fatalf("%s version: %v", binary, err)
	}
	var info map[string]string
	if err := json.Unmarshal(out, &info); err != nil {
		t.Fatalf("%s version -o json: %v\n%s", binary, err, out)
	}
	want := map[string]string{"version": version, "kubernetes": "v1.37.1", "goVersion": runtime.Version(),
		"platform": runtime.GOOS + "/" + runtime.GOARCH}
	for k, v := range want {
		if info[k] != v {
			t.Errorf("%s: %s = %q, want %q", binary, k, info[k], v)
		}
	}
	for _, k := range []string{"commit", "date"} {
		if info[k] == "" || info[k] == "unknown" {
			t.Errorf("%s: %s not stamped: %q", binary, k, info[k])
		}
	}
}

func TestDistArchives(t *testing.T) {
	dir, version := distDir(t)
	sums := checkSums(t, dir)
	for _, p := range platforms("MUTATIS_PLATFORMS", "linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64", "windows/amd64", "windows/arm64") {
		goos, goarch, _ := strings.Cut(p, "/")
		name := ArchiveName(version, goos, goarch)
		t.Run(name, func(t *testing.T) {
			if _, ok := sums[name]; !ok {
				t.Fatalf("SHA256SUMS does not list %s", name)
			}
			data, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			entries := readArchive(t, data, goos == "windows")
			var names []string
			var binary []byte
			for _, e := range entries {
				names = append(names, e.name)
				if e.name == BinaryName(goos) {
					binary = e.data
					if e.mode != 0o755 {
						t.Errorf("%s has mode %v", e.name, e.mode)
					}
				}
			}
			if got, want := strings.Join(names, ","), "LICENSE,README.md,"+BinaryName(goos); got != want {
				t.Errorf("entries %s, want %s", got, want)
			}
			if goos != runtime.GOOS || goarch != runtime.GOARCH {
				return
			}
			// The host's archive: extract the binary and run it.
			bin := filepath.Join(t.TempDir(), BinaryName(goos))
			if err := os.WriteFile(bin, binary, 0o755); err != nil {
				t.Fatal(err)
			}
			runVersion(t, bin, version)
		})
	}
}

// checkSums checks every line of DIST/SHA256SUMS and returns the names.
func checkSums(t *testing.T, dir string) map[string]bool {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	names := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q", sc.Text())
		}
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.Sum256(data)
		if hex.EncodeToString(h[:]) != sum {
			t.Errorf("%s: checksum mismatch", name)
		}
		names[name] = true
	}
	return names
}

func TestDistImage(t *testing.T) {
	dir, version := distDir(t)
	sums := checkSums(t, dir)
	idx := readLayout(t, filepath.Join(dir, "image"), version)
	bins := checkIndex(t, idx, nil, version)
	want := platforms("MUTATIS_IMAGE_PLATFORMS", "linux/amd64", "linux/arm64")
	for _, p := range want {
		if bins[p] == nil {
			t.Errorf("no image for %s (the index has %v)", p, keys(bins))
		}
	}
	if !sums["mutatis_"+version+"_image.oci.tar"] {
		t.Error("SHA256SUMS does not list the OCI archive")
	}

	// The same inputs (the binaries, the revision and time in the labels)
	// give the same digest.
	m, _ := idx.IndexManifest()
	first, err := idx.Image(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := first.ConfigFile()
	again := &Image{Repository: "ghcr.io/mutatis-dev/mutatis", Version: version,
		Revision: cfg.Config.Labels["org.opencontainers.image.revision"], Created: cfg.Created.Time,
		Source: cfg.Config.Labels["org.opencontainers.image.source"], Binaries: bins}
	rebuilt, _, err := again.Build()
	if err != nil {
		t.Fatal(err)
	}
	wrote, _ := idx.Digest()
	if got, _ := rebuilt.Digest(); got != wrote {
		t.Errorf("rebuilt from the same inputs: %s, make image wrote %s", got, wrote)
	}

	host, ok := bins[runtime.GOOS+"/"+runtime.GOARCH]
	if !ok {
		t.Skipf("no image for the host %s/%s to run", runtime.GOOS, runtime.GOARCH)
	}
	bin := filepath.Join(t.TempDir(), "mutatis")
	if err := os.WriteFile(bin, host, 0o755); err != nil {
		t.Fatal(err)
	}
	runVersion(t, bin, version)
	if !bytes.HasPrefix(host, []byte("\x7fELF")) {
		t.Error("the image's binary is no ELF executable")
	}
}

// The action installs the host's archive of DIST (as a release directory
// <base>/<version>/) and tests the examples with it.
func TestDistAction(t *testing.T) {
	dir, version := distDir(t)
	needShell(t)
	base := t.TempDir()
	if err := os.Symlink(dir, filepath.Join(base, version)); err != nil {
		t.Fatal(err)
	}
	install, work := t.TempDir(), t.TempDir()
	code, out := script(t, "install.sh", "MUTATIS_VERSION="+version, "MUTATIS_BASE_URL=file://"+base, "MUTATIS_INSTALL_DIR="+install)
	if code != 0 || !strings.Contains(out, "mutatis "+version) {
		t.Fatalf("install.sh: exit %d\n%s", code, out)
	}
	examples, err := filepath.Abs(filepath.Join(repoRoot, "examples"))
	if err != nil {
		t.Fatal(err)
	}
	summary, junit := filepath.Join(work, "summary.md"), filepath.Join(work, "junit.xml")
	code, out = script(t, "test.sh", "MUTATIS="+filepath.Join(install, "mutatis"), "MUTATIS_PATHS="+examples,
		"MUTATIS_JUNIT="+junit, "GITHUB_STEP_SUMMARY="+summary)
	if code != 0 {
		t.Fatalf("test.sh: exit %d\n%s", code, out)
	}
	s, _ := os.ReadFile(summary)
	if !regexp.MustCompile(`Passed: [1-9][0-9]* cases`).Match(s) {
		t.Errorf("summary:\n%s", s)
	}
	if j, _ := os.ReadFile(junit); !bytes.Contains(j, []byte("<testcase ")) {
		t.Errorf("the JUnit report has no cases:\n%s", j)
	}
}
