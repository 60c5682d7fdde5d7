package lsp

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"go.lsp.dev/protocol"

	"github.com/mutatis-dev/mutatis/manifest"
	"github.com/mutatis-dev/mutatis/policytest"
)

// Peers' suites: kat's tests/ directories, kaptest's kaptest.yaml and
// Kyverno's kyverno-test.yaml, loaded as `mutatis test` loads them
// (policytest.KatSuite, KaptestSuite, KyvernoSuite). Their loaders read
// the files from disk, with the files those name: a suite is checked as
// saved, again after a save or a change on disk.

// peerSuite is one suite of a peer's format in the workspace: the file
// (or, for kat, the tests/ directory) policytest loads and the kind.
type peerSuite struct {
	path string
	kind string // "kat", "kaptest" or "kyverno"
}

// peerCache holds each peer suite's loading error (nil: it loads) by
// path, until a file changes on disk.
type peerCache map[string]error

// peerSuites finds the peer suites among the workspace's files: a
// kaptest.yaml or kyverno-test.yaml with policy tests (the markers
// policytest's discovery looks for, in the text the server has), and
// the tests/ directories of kat holding a workspace file.
func peerSuites(files map[string]*fileState) []peerSuite {
	var out []peerSuite
	kat := map[string]bool{}
	for path, f := range files {
		base := filepath.Base(path)
		switch {
		case f.peer && strings.HasPrefix(base, "kaptest"):
			out = append(out, peerSuite{path: path, kind: "kaptest"})
		case f.peer && strings.HasPrefix(base, "kyverno"):
			out = append(out, peerSuite{path: path, kind: "kyverno"})
		default:
			if dir := filepath.Dir(path); filepath.Base(dir) == "tests" && !kat[dir] {
				kat[dir] = true
				if policytest.IsKatTestsDir(dir) {
					out = append(out, peerSuite{path: dir, kind: "kat"})
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out
}

func containsAny(data []byte, markers ...string) bool {
	for _, m := range markers {
		if bytes.Contains(data, []byte(m)) {
			return true
		}
	}
	return false
}

// load reads a peer suite through policytest; its error, nil when it
// loads.
func (p peerSuite) load(ctx context.Context) error {
	var err error
	switch p.kind {
	case "kat":
		_, err = policytest.KatSuite(ctx, p.path)
	case "kaptest":
		_, err = policytest.KaptestSuite(ctx, p.path)
	case "kyverno":
		_, err = policytest.KyvernoSuite(ctx, p.path)
	}
	return err
}

// peerDiagnostics adds the loading errors of the workspace's peer suites
// (cache keeps them until a file changes on disk): a field error of a
// kaptest or Kyverno file at its field; one naming a file of a kat
// directory (or of the suite's directory) on that file; anything else on
// the suite file's first line (for kat, on the directory's first file the
// workspace holds).
func (a *Analysis) peerDiagnostics(cache *peerCache) {
	if *cache == nil {
		*cache = peerCache{}
	}
	for _, ps := range peerSuites(a.files) {
		err, ok := (*cache)[ps.path]
		if !ok {
			err = ps.load(context.Background())
			(*cache)[ps.path] = err
		}
		if err == nil {
			continue
		}
		a.peerError(ps, err)
	}
}

// peerError places a peer suite's loading error.
func (a *Analysis) peerError(ps peerSuite, err error) {
	home := ps.path
	if ps.kind == "kat" {
		home = a.firstFileIn(ps.path)
	}
	var ie *policytest.InputError
	if !errors.As(err, &ie) || len(ie.Errs) == 0 {
		a.addPeerDiagnostic(home, "", err.Error(), ps.kind)
		return
	}
	for _, fe := range ie.Errs {
		file, field := home, fe.Field
		// A field error of another file: "tests/x.object.yaml: spec.foo"
		// or "x.yaml: …", relative to the suite's directory (kat: the
		// policies' directory, the parent of tests/).
		dir := filepath.Dir(ps.path)
		if name, rest, found := strings.Cut(fe.Field, ": "); found {
			cand := filepath.Join(dir, name)
			if a.files[cand] != nil {
				file, field = cand, rest
			} else if cand == ps.path {
				field = rest
			}
		} else if cand := filepath.Join(dir, fe.Field); a.files[cand] != nil {
			file, field = cand, ""
		}
		a.addPeerDiagnostic(file, field, fe.ErrorBody(), ps.kind)
	}
}

// addPeerDiagnostic adds a diagnostic of a peer suite to file, on field
// when it is found there (an unknown field on its key), else on the
// first line with the field named.
func (a *Analysis) addPeerDiagnostic(file, field, msg, kind string) {
	f := a.files[file]
	if f == nil {
		return
	}
	d := protocol.Diagnostic{Severity: protocol.DiagnosticSeverityError, Source: "mutatis", Code: kind + "-suite", Message: msg, Range: lineRange(f.parsed.text, 0)}
	found := false
	if root := f.parsed.root(manifest.Source{Item: -1}); root != nil && field != "" {
		value, key, whole := fieldNode(root, field)
		if whole {
			found = true
			d.Range = nodeRange(f.parsed, value, key, !strings.Contains(msg, "unknown field"))
		}
	}
	if !found && field != "" {
		d.Message = field + ": " + msg
	}
	a.Diagnostics[file] = append(a.Diagnostics[file], d)
}

// isPeerSuiteFile tells whether a file is a kaptest or Kyverno suite
// (by its name and the markers policytest's discovery reads) or a part
// of a kat test that holds no object (a request, audit annotations,
// authorizer decisions): not manifests.
func isPeerSuiteFile(path string, data []byte) bool {
	switch filepath.Base(path) {
	case policytest.KaptestFile, "kaptest.yml":
		return containsAny(data, "mapTestSuites:", "vapTestSuites:", "testSuites:")
	case policytest.KyvernoTestFile, "kyverno-test.yml":
		return containsAny(data, "isMutatingAdmissionPolicy: true", "isValidatingAdmissionPolicy: true")
	}
	// The parts of a kat test that are no objects.
	if filepath.Base(filepath.Dir(path)) == "tests" {
		for _, suffix := range []string{".request.yaml", ".annotations.yaml", ".authorizer.yaml"} {
			if strings.HasSuffix(path, suffix) {
				return true
			}
		}
	}
	return false
}

// firstFileIn is the first workspace file (by name) in dir.
func (a *Analysis) firstFileIn(dir string) string {
	best := ""
	for p := range a.files {
		if filepath.Dir(p) == dir && (best == "" || p < best) {
			best = p
		}
	}
	if best == "" {
		if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
			best = filepath.Join(dir, entries[0].Name())
		}
	}
	return best
}
