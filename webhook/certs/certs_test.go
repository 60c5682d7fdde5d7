package certs

import (
	"os"
	"testing"
	"time"
)

func TestEnsure(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	day := 24 * time.Hour
	steps := []struct {
		name                 string
		opts                 Options
		wantNewCA, wantNewTL bool
	}{
		{name: "an empty directory gets a CA and a certificate", opts: Options{Now: now}, wantNewCA: true, wantNewTL: true},
		{name: "valid files are reused", opts: Options{Now: now.Add(30 * day)}},
		{name: "a new host gets a new certificate from the same CA", opts: Options{Hosts: []string{"localhost", "mutatis.svc"}, Now: now.Add(30 * day)}, wantNewTL: true},
		{name: "a certificate near its end is renewed", opts: Options{Hosts: []string{"localhost", "mutatis.svc"}, Now: now.Add(360 * day)}, wantNewTL: true},
		{name: "a CA that would expire first is replaced", opts: Options{Hosts: []string{"localhost"}, Now: now.Add(CAValidity - day)}, wantNewCA: true, wantNewTL: true},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			out, err := Ensure(dir, st.opts)
			if err != nil {
				t.Fatal(err)
			}
			if out.NewCA != st.wantNewCA || out.NewCert != st.wantNewTL {
				t.Errorf("new CA %v, new certificate %v; want %v, %v", out.NewCA, out.NewCert, st.wantNewCA, st.wantNewTL)
			}
			hosts := st.opts.Hosts
			if hosts == nil {
				hosts = DefaultHosts()
			}
			if err := Check(out.Paths, hosts, st.opts.Now); err != nil {
				t.Error(err)
			}
		})
	}
	info, err := os.Stat(PathsIn(dir).Key)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("key mode %v, want 0600", info.Mode().Perm())
	}
}

func TestCheckRefuses(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	if _, err := Generate(dir, Options{Hosts: []string{"a.example"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := Generate(other, Options{}); err != nil {
		t.Fatal(err)
	}
	foreignKey := PathsIn(dir)
	foreignKey.Key = PathsIn(other).Key
	foreignCA := PathsIn(dir)
	foreignCA.CACert, foreignCA.CAKey = PathsIn(other).CACert, PathsIn(other).CAKey
	cases := []struct {
		name  string
		paths Paths
		hosts []string
		until time.Time
	}{
		{name: "another host", paths: PathsIn(dir), hosts: []string{"b.example"}, until: time.Now()},
		{name: "after expiry", paths: PathsIn(dir), hosts: []string{"a.example"}, until: time.Now().Add(400 * 24 * time.Hour)},
		{name: "a key of another certificate", paths: foreignKey, hosts: []string{"a.example"}, until: time.Now()},
		{name: "a certificate of another CA", paths: foreignCA, hosts: []string{"a.example"}, until: time.Now()},
		{name: "missing files", paths: PathsIn(t.TempDir()), hosts: []string{"a.example"}, until: time.Now()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := Check(tc.paths, tc.hosts, tc.until); err == nil {
				t.Error("Check passed")
			}
		})
	}
	if err := Check(PathsIn(dir), []string{"a.example"}, time.Now()); err != nil {
		t.Errorf("the valid pair fails: %v", err)
	}
}
