package buildinfo

import (
	"encoding/json"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	k8s := &debug.Module{Path: KubernetesModule, Version: "v1.37.1"}
	vcs := []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123abcd"},
		{Key: "vcs.time", Value: "2026-11-26T10:00:00Z"},
	}
	cases := []struct {
		name                  string
		version, commit, date string
		bi                    *debug.BuildInfo
		want                  Info
	}{
		{
			name:    "the linker's stamps win over the go command's",
			version: "v0.2.0", commit: "feedface", date: "2026-01-02T03:04:05Z",
			bi:   &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Deps: []*debug.Module{k8s}, Settings: vcs},
			want: Info{Version: "v0.2.0", Commit: "feedface", Date: "2026-01-02T03:04:05Z", GoVersion: "go1.26.8", Kubernetes: "v1.37.1"},
		},
		{
			name: "without stamps the VCS settings give the commit and date",
			bi:   &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Deps: []*debug.Module{k8s}, Settings: vcs},
			want: Info{Version: "(devel)", Commit: "0123abcd", Date: "2026-11-26T10:00:00Z", GoVersion: "go1.26.8", Kubernetes: "v1.37.1"},
		},
		{
			name: "a modified work tree marks the commit dirty",
			bi: &debug.BuildInfo{GoVersion: "go1.26.8", Deps: []*debug.Module{k8s},
				Settings: append(vcs[:1:1], debug.BuildSetting{Key: "vcs.modified", Value: "true"})},
			want: Info{Version: "(devel)", Commit: "0123abcd-dirty", Date: Unknown, GoVersion: "go1.26.8", Kubernetes: "v1.37.1"},
		},
		{
			name: "a module version from go install is the version",
			bi:   &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.3.0"}, Deps: []*debug.Module{k8s}},
			want: Info{Version: "v0.3.0", Commit: Unknown, Date: Unknown, GoVersion: "go1.26.8", Kubernetes: "v1.37.1"},
		},
		{
			name: "a replaced k8s.io/kubernetes reports the replacement's version",
			bi: &debug.BuildInfo{GoVersion: "go1.26.8", Deps: []*debug.Module{
				{Path: KubernetesModule, Version: "v0.0.0", Replace: &debug.Module{Path: KubernetesModule, Version: "v1.37.1"}}}},
			want: Info{Version: "(devel)", Commit: Unknown, Date: Unknown, GoVersion: "go1.26.8", Kubernetes: "v1.37.1"},
		},
		{
			name: "no build information at all leaves every field named unknown, never empty",
			want: Info{Version: "(devel)", Commit: Unknown, Date: Unknown, GoVersion: runtime.Version(), Kubernetes: Unknown},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.want.Platform = runtime.GOOS + "/" + runtime.GOARCH
			if got := resolve(tc.version, tc.commit, tc.date, tc.bi); got != tc.want {
				t.Errorf("resolve:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestFormats(t *testing.T) {
	i := Info{Version: "v0.2.0", Commit: "feedface", Date: "2026-01-02T03:04:05Z", GoVersion: "go1.26.8", Kubernetes: "v1.37.1", Platform: "linux/arm64"}
	text := i.Text()
	for _, want := range []string{"mutatis v0.2.0\n", "  commit:     feedface\n", "  built:      2026-01-02T03:04:05Z\n",
		"  go:         go1.26.8\n", "  platform:   linux/arm64\n", "  kubernetes: v1.37.1 "} {
		if !strings.Contains(text, want) {
			t.Errorf("Text() lacks %q:\n%s", want, text)
		}
	}
	if got, want := i.String(), "mutatis v0.2.0 (commit feedface, built 2026-01-02T03:04:05Z, go1.26.8, linux/arm64, Kubernetes v1.37.1 semantics)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	b, err := json.Marshal(i)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `{"version":"v0.2.0","commit":"feedface","date":"2026-01-02T03:04:05Z","goVersion":"go1.26.8","kubernetes":"v1.37.1","platform":"linux/arm64"}`; got != want {
		t.Errorf("JSON = %s\nwant %s", got, want)
	}
}
