// Package buildinfo says which build of mutatis is running: its version,
// the commit and time it was built from, the Go version, and the
// Kubernetes release whose admission semantics it reproduces.
//
// Release builds (make build, make dist, make image) stamp the version,
// commit and date with the linker:
//
//	-X github.com/mutatis-dev/mutatis/internal/buildinfo.version=v0.1.0
//	-X github.com/mutatis-dev/mutatis/internal/buildinfo.commit=<sha>
//	-X github.com/mutatis-dev/mutatis/internal/buildinfo.date=<RFC 3339>
//
// A plain `go build` stamps nothing; the commit and date then come from the
// go command's VCS stamp (runtime/debug.ReadBuildInfo: vcs.revision,
// vcs.time), when it made one. The Kubernetes version is always the one the
// binary was linked with: the version of module k8s.io/kubernetes in the
// build information, never a constant that could drift from go.mod.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Set by the linker (-ldflags -X); never written at run time.
var (
	version string
	commit  string
	date    string
)

// KubernetesModule is the module whose version names the Kubernetes
// release mutatis reproduces.
const KubernetesModule = "k8s.io/kubernetes"

// Unknown stands for a field neither the linker nor the build information
// provides.
const Unknown = "unknown"

// Info describes one build. Its JSON form is what `mutatis version -o json`
// prints.
type Info struct {
	// Version is the release (v1.2.3), or "(devel)" for an unstamped build.
	Version string `json:"version"`
	// Commit is the git commit built from, with "-dirty" when the work tree
	// had changes.
	Commit string `json:"commit"`
	// Date is the commit's time (RFC 3339, UTC) for release builds, which
	// take SOURCE_DATE_EPOCH from it so that builds are reproducible.
	Date string `json:"date"`
	// GoVersion is the Go toolchain that built the binary.
	GoVersion string `json:"goVersion"`
	// Kubernetes is the version of k8s.io/kubernetes linked in: the
	// kube-apiserver release whose semantics mutatis reproduces.
	Kubernetes string `json:"kubernetes"`
	// Platform is GOOS/GOARCH.
	Platform string `json:"platform"`
}

// Read returns the running binary's build information.
func Read() Info {
	bi, _ := debug.ReadBuildInfo()
	return resolve(version, commit, date, bi)
}

// resolve merges the linker's stamps with the go command's build
// information; the stamps win.
func resolve(version, commit, date string, bi *debug.BuildInfo) Info {
	info := Info{
		Version:    version,
		Commit:     commit,
		Date:       date,
		GoVersion:  runtime.Version(),
		Kubernetes: Unknown,
		Platform:   runtime.GOOS + "/" + runtime.GOARCH,
	}
	if bi != nil {
		if bi.GoVersion != "" {
			info.GoVersion = bi.GoVersion
		}
		if info.Version == "" && bi.Main.Version != "" {
			info.Version = bi.Main.Version
		}
		settings := map[string]string{}
		for _, s := range bi.Settings {
			settings[s.Key] = s.Value
		}
		if info.Commit == "" && settings["vcs.revision"] != "" {
			info.Commit = settings["vcs.revision"]
			if settings["vcs.modified"] == "true" {
				info.Commit += "-dirty"
			}
		}
		if info.Date == "" {
			info.Date = settings["vcs.time"]
		}
		for _, m := range bi.Deps {
			if m.Path != KubernetesModule {
				continue
			}
			info.Kubernetes = m.Version
			if m.Replace != nil && m.Replace.Version != "" {
				info.Kubernetes = m.Replace.Version
			}
		}
	}
	if info.Version == "" {
		info.Version = "(devel)"
	}
	if info.Commit == "" {
		info.Commit = Unknown
	}
	if info.Date == "" {
		info.Date = Unknown
	}
	return info
}

// String is the one-line form logged by serve and printed by --version.
func (i Info) String() string {
	return fmt.Sprintf("mutatis %s (commit %s, built %s, %s, %s, Kubernetes %s semantics)",
		i.Version, i.Commit, i.Date, i.GoVersion, i.Platform, i.Kubernetes)
}

// Text is the multi-line form `mutatis version` prints.
func (i Info) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "mutatis %s\n", i.Version)
	for _, f := range [][2]string{
		{"commit", i.Commit},
		{"built", i.Date},
		{"go", i.GoVersion},
		{"platform", i.Platform},
		{"kubernetes", i.Kubernetes + " (the kube-apiserver whose admission semantics mutatis reproduces)"},
	} {
		fmt.Fprintf(&b, "  %-11s %s\n", f[0]+":", f[1])
	}
	return b.String()
}
