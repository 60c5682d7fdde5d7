package lsp

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"go.lsp.dev/protocol"
	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/mutatis-dev/mutatis/binding"
	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/costs"
	"github.com/mutatis-dev/mutatis/lint"
	"github.com/mutatis-dev/mutatis/manifest"
	"github.com/mutatis-dev/mutatis/policytest"
)

// Analysis is what the server knows of a workspace at one moment: every
// file's documents and objects, the policies compiled, and the
// diagnostics of each file.
type Analysis struct {
	// comp is the compiler the analysis ran with.
	comp  *compiler.Compiler
	files map[string]*fileState
	set   *manifest.Set
	crds  *costs.CRDIndex
	// compiled holds the compilation of each MutatingAdmissionPolicy by
	// name.
	compiled map[string]*compiler.Policy
	// surrogates holds each ValidatingAdmissionPolicy's cost surrogate
	// (costs.SurrogateOf: its variables, then its expressions as
	// variables) compiled, by name: the types of its variables and
	// expressions.
	surrogates map[string]surrogate
	// schemas caches the kinds' schemas resolved.
	schemas map[schema.GroupVersionKind]*spec.Schema
	// Diagnostics holds every file's diagnostics, by path (an empty list
	// for a file without any, so that a client clears what it showed).
	Diagnostics map[string][]protocol.Diagnostic
}

// fileState is one file's content, parsed once per content.
type fileState struct {
	data   []byte
	parsed *parsedFile
	set    *manifest.Set
	errs   manifest.ErrorList
	suite  bool
	// suiteErr is a suite file's problem (policytest.ParseSuite).
	suiteErr error
	// peer is a kaptest or Kyverno suite file (peers.go).
	peer bool
}

// newFileState parses one file's content (path names it).
func newFileState(path string, data []byte) *fileState {
	fs := &fileState{data: data, suite: policytest.IsSuiteFile(path)}
	if len(data) > maxFileSize {
		fs.errs = manifest.ErrorList{{Source: manifest.Source{File: path, Item: -1}, Line: 1, Err: fmt.Errorf("the file is %d bytes, over the %d bytes the language server reads", len(data), maxFileSize)}}
		fs.set = &manifest.Set{}
		fs.parsed = &parsedFile{text: newText(data)}
		return fs
	}
	fs.parsed = parseFile(data)
	if fs.peer = !fs.suite && isPeerSuiteFile(path, data); fs.peer {
		fs.set = &manifest.Set{}
		return fs
	}
	if fs.suite {
		_, fs.suiteErr = policytest.ParseSuite(path, data)
		fs.set = &manifest.Set{}
		return fs
	}
	set, err := manifest.Parse(path, data)
	if set == nil {
		set = &manifest.Set{}
	}
	fs.set = set
	var l manifest.ErrorList
	if errors.As(err, &l) {
		fs.errs = l
	} else if err != nil {
		fs.errs = manifest.ErrorList{{Source: manifest.Source{File: path, Item: -1}, Err: err}}
	}
	return fs
}

// maxFileSize bounds what one file may hold: a larger one gets one
// diagnostic and no analysis.
const maxFileSize = 4 << 20

// policyCache keeps the checks of each policy revision from one analysis
// to the next while the workspace's other objects (CRDs, params: what the
// checks read beside the policy) are the same.
type policyCache struct {
	fingerprint string
	policies    map[string]policyResult
	next        map[string]policyResult
	// surrogates keeps the compiled surrogates of the
	// ValidatingAdmissionPolicies by revision.
	surrogates, nextSurrogates map[string]surrogate
}

// policyResult is what the checks of one policy found.
// surrogate is a ValidatingAdmissionPolicy's cost surrogate and its
// compilation.
type surrogate struct {
	costs.Surrogate
	compiled *compiler.Policy
}

type policyResult struct {
	findings []lint.Finding
	errs     field.ErrorList
}

// reset empties the cache when the objects' fingerprint changed.
func (c *policyCache) reset(fingerprint string) {
	if c.fingerprint != fingerprint || c.policies == nil {
		c.fingerprint, c.policies = fingerprint, map[string]policyResult{}
	}
	c.next = map[string]policyResult{}
	c.nextSurrogates = map[string]surrogate{}
}

// objectsFingerprint names the contents of the files that hold objects
// other than policies and bindings: a file's state is new whenever its
// text changes.
func objectsFingerprint(paths []string, files map[string]*fileState) string {
	var b strings.Builder
	for _, p := range paths {
		if f := files[p]; len(f.set.Objects) > 0 {
			fmt.Fprintf(&b, "%s\x00%p\x00", p, f)
		}
	}
	return b.String()
}

// analyze runs what `mutatis lint` runs over files (by path), with comp;
// cache (nil: none) keeps the checks of unchanged policies.
func analyze(comp *compiler.Compiler, files map[string]*fileState, cache *policyCache) *Analysis {
	if cache == nil {
		cache = &policyCache{}
	}
	a := &Analysis{comp: comp, schemas: map[schema.GroupVersionKind]*spec.Schema{}, files: files, set: &manifest.Set{}, compiled: map[string]*compiler.Policy{}, surrogates: map[string]surrogate{}, Diagnostics: map[string][]protocol.Diagnostic{}}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
		a.Diagnostics[p] = []protocol.Diagnostic{}
	}
	sort.Strings(paths)
	var problems manifest.ErrorList
	for _, p := range paths {
		f := files[p]
		a.set.Append(f.set)
		problems = append(problems, f.errs...)
		if f.suiteErr != nil {
			a.suiteDiagnostics(p, f)
		}
	}
	crds, crdProblems := costs.IndexCRDs(a.set.Objects)
	a.crds = crds
	problems = append(problems, crdProblems...)
	var findings []lint.Finding
	checker := lint.NewChecker(a.set.Objects, false)
	cache.reset(objectsFingerprint(paths, files))
	for _, p := range a.set.Policies {
		cp, err := comp.Compile(p.Policy)
		if err != nil {
			continue
		}
		a.compiled[p.Policy.Name] = cp
		key := p.Source.String() + "\x00" + compiler.Key(p.Policy)
		r, ok := cache.policies[key]
		if !ok {
			r = policyResult{findings: checker.Policy(p, cp)}
			if errs, err := comp.Validate(p.Policy); err == nil && len(errs) > 0 {
				r.errs = errs
			}
			for _, e := range crds.Estimates(p.Policy, cp) {
				if e.Cost.Unbounded() || e.Cost.Max <= compiler.PerCallLimit {
					continue
				}
				r.findings = append(r.findings, lint.Finding{Severity: lint.Warning, Check: "cost", Source: p.Source, Kind: "MutatingAdmissionPolicy", Name: p.Policy.Name, Field: e.Expression.Path.String(),
					Message: fmt.Sprintf("estimated cost %d exceeds the per-call limit %d: evaluations on inputs of the estimated sizes fail with \"operation cancelled: actual cost limit exceeded\"", e.Cost.Max, uint64(compiler.PerCallLimit))})
			}
		}
		cache.next[key] = r
		if len(r.errs) > 0 {
			problems = append(problems, &manifest.Error{Source: p.Source, Kind: "MutatingAdmissionPolicy", Name: p.Policy.Name, Errs: r.errs})
		}
		findings = append(findings, r.findings...)
	}
	cache.policies, cache.next = cache.next, nil
	for _, p := range a.set.Rejected {
		if errs, err := comp.Validate(p.Policy); err == nil {
			for _, e := range problems {
				if e.Source == p.Source && len(e.Errs) > 0 {
					e.Errs = appendNew(e.Errs, errs)
					break
				}
			}
		}
	}
	for _, p := range a.set.ValidatingPolicies {
		findings = append(findings, checker.ValidatingPolicy(comp, p)...)
		sur := costs.SurrogateOf(p.Policy)
		key := compiler.Key(sur.Policy)
		s, ok := cache.surrogates[key]
		if !ok {
			if cp, err := comp.Compile(sur.Policy); err == nil {
				s = surrogate{Surrogate: sur, compiled: cp}
			}
			comp.Forget(sur.Policy.Name) // the surrogate's, not a policy's
		}
		if s.compiled != nil {
			cache.nextSurrogates[key] = s
			a.surrogates[p.Policy.Name] = s
		}
	}
	cache.surrogates, cache.nextSurrogates = cache.nextSurrogates, nil
	findings = append(findings, checker.Set(a.set)...)
	if policies, bindings := a.set.APIObjects(); len(policies) > 0 && len(bindings) > 0 {
		for _, w := range binding.Check(policies, bindings) {
			if src, ok := a.sourceOf(w.Kind, w.Name); ok {
				findings = append(findings, lint.Finding{Severity: lint.Warning, Check: "binding", Source: src, Kind: w.Kind, Name: w.Name, Field: w.Field, Message: w.Message})
			}
		}
	}
	findings = append(lint.Problems(problems), findings...)
	seen := map[string]bool{}
	for _, f := range findings {
		fs := files[f.Source.File]
		if fs == nil {
			continue
		}
		for _, d := range a.diagnostics(fs, f) {
			k := fmt.Sprint(f.Source.File, d.Range, d.Message)
			if seen[k] {
				continue
			}
			seen[k] = true
			a.Diagnostics[f.Source.File] = append(a.Diagnostics[f.Source.File], d)
		}
	}
	return a
}

// appendNew adds the errors of more that list does not hold yet.
func appendNew(list, more field.ErrorList) field.ErrorList {
	have := map[string]bool{}
	for _, e := range list {
		have[e.Error()] = true
	}
	for _, e := range more {
		if !have[e.Error()] {
			list = append(list, e)
		}
	}
	return list
}

// sourceOf finds where the policy or binding named name was read.
func (a *Analysis) sourceOf(kind, name string) (manifest.Source, bool) {
	switch kind {
	case "MutatingAdmissionPolicy":
		for _, p := range a.set.Policies {
			if p.Policy.Name == name {
				return p.Source, true
			}
		}
	case "MutatingAdmissionPolicyBinding":
		for _, b := range a.set.Bindings {
			if b.Binding.Name == name {
				return b.Source, true
			}
		}
	}
	return manifest.Source{}, false
}

// celError matches the position and message of one CEL error in a
// compilation's detail: "ERROR: <input>:1:10: undeclared reference …".
var celError = regexp.MustCompile(`(?m)ERROR: <input>:(\d+):(\d+): ([^\n]*)`)

// diagnostics turns a finding into diagnostics with ranges in the file: a
// CEL position inside the expression's YAML string when there is one (one
// diagnostic per CEL error of a compilation), else the field's value.
func (a *Analysis) diagnostics(fs *fileState, f lint.Finding) []protocol.Diagnostic {
	sev := protocol.DiagnosticSeverityError
	if f.Severity == lint.Warning {
		sev = protocol.DiagnosticSeverityWarning
	}
	d := protocol.Diagnostic{Severity: sev, Source: "mutatis", Code: f.Check, Message: f.Message}
	if f.Check == "" {
		d.Code = nil
	}
	root := fs.parsed.root(f.Source)
	if root == nil {
		l := max(f.Line, 1) - 1
		d.Range = lineRange(fs.parsed.text, l)
		return []protocol.Diagnostic{d}
	}
	value, key, whole := fieldNode(root, f.Field)
	if value.Kind == yaml.ScalarNode && whole {
		if f.CELLine > 0 {
			d.Range = celRange(fs.parsed, value, f.CELLine, f.CELColumn, fieldNamed(f.Message))
			return []protocol.Diagnostic{d}
		}
		if ms := celError.FindAllStringSubmatch(f.Message, -1); ms != nil {
			var out []protocol.Diagnostic
			for _, m := range ms {
				l, _ := strconv.Atoi(m[1])
				c, _ := strconv.Atoi(m[2])
				e := d
				e.Message = strings.TrimSpace(m[3])
				e.Range = celRange(fs.parsed, value, l, c, "")
				out = append(out, e)
			}
			return out
		}
	}
	d.Range = nodeRange(fs.parsed, value, key, whole)
	return []protocol.Diagnostic{d}
}

// lineRange is the range of line l (0-based) of t.
func lineRange(t *text, l int) protocol.Range {
	l = min(l, len(t.lines)-1)
	return protocol.Range{Start: t.position(t.lines[l]), End: t.position(t.lineEnd(l))}
}

// nodeRange is the range of a field's value: a scalar's characters; the
// key of a collection (or of a field not found, the deepest found).
func nodeRange(f *parsedFile, value, key *yaml.Node, whole bool) protocol.Range {
	n := value
	if (value.Kind != yaml.ScalarNode || !whole) && key != nil {
		n = key
	}
	if n.Kind == yaml.ScalarNode {
		offs := scalarOffsets(f.text, n)
		start := f.text.yamlOffset(n.Line, n.Column)
		end := offs[len(offs)-1]
		if end <= start {
			end = f.text.lineEnd(lineOf(f.text.lines, start))
		}
		return protocol.Range{Start: f.text.position(start), End: f.text.position(max(end, start))}
	}
	start := f.text.yamlOffset(n.Line, n.Column)
	return protocol.Range{Start: f.text.position(start), End: f.text.position(f.text.lineEnd(lineOf(f.text.lines, start)))}
}

// fieldMessage finds the field a finding's message names: field "x" ….
var fieldMessage = regexp.MustCompile(`^field "([A-Za-z_][A-Za-z0-9_]*)"`)

func fieldNamed(msg string) string {
	if m := fieldMessage.FindStringSubmatch(msg); m != nil {
		return m[1]
	}
	return ""
}

// celRange is the range of the CEL token at line:column (1-based, in
// characters) of the expression held by scalar n: from that character to
// the end of the identifier or number it starts, one character at least.
// A finding about a field (name) whose position is a macro's (has(…)
// is placed on its parenthesis) is moved to the first selection of name
// from there on.
func celRange(f *parsedFile, n *yaml.Node, line, col int, name string) protocol.Range {
	i := celIndex(n.Value, line, col)
	offs := scalarOffsets(f.text, n)
	runes := []rune(n.Value)
	if name != "" {
		if j := selectionOf(runes, i, name); j >= 0 {
			i = j
		}
	}
	// A selection's position is its dot (cel-go's): the field name after
	// it is what is wrong.
	if i+1 < len(runes) && runes[i] == '?' && runes[i+1] == '.' {
		i++
	}
	if i+1 < len(runes) && runes[i] == '.' && isIdentRune(runes[i+1]) {
		i++
	}
	j := i
	for j < len(runes) && isIdentRune(runes[j]) {
		j++
	}
	if j == i && j < len(runes) {
		j++
	}
	return protocol.Range{Start: f.text.position(offs[i]), End: f.text.position(max(offs[j], offs[i]))}
}

// celIndex is the index of the character at line:column (1-based) of an
// expression, clamped to it.
func celIndex(expr string, line, col int) int {
	i, l := 0, 1
	runes := []rune(expr)
	for i < len(runes) && l < line {
		if runes[i] == '\n' {
			l++
		}
		i++
	}
	for c := 1; c < col && i < len(runes) && runes[i] != '\n'; c++ {
		i++
	}
	return i
}

// selectionOf is the index of the first ".name" (or the name itself at
// i) from i on, not followed by an identifier character; -1 if none.
func selectionOf(runes []rune, i int, name string) int {
	target := []rune(name)
	for j := i; j+len(target) <= len(runes); j++ {
		if string(runes[j:j+len(target)]) != name || (j > 0 && runes[j-1] != '.' && j != i) {
			continue
		}
		if e := j + len(target); e < len(runes) && isIdentRune(runes[e]) {
			continue
		}
		if j > 0 && runes[j-1] == '.' {
			return j - 1
		}
		if j == i {
			return j
		}
	}
	return -1
}

func isIdentRune(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

// suiteDiagnostics reports a suite file's problem: each field error at
// its field, a decoding error on the file's first line.
func (a *Analysis) suiteDiagnostics(path string, f *fileState) {
	var ie *policytest.InputError
	if !errors.As(f.suiteErr, &ie) || len(ie.Errs) == 0 {
		a.Diagnostics[path] = append(a.Diagnostics[path], protocol.Diagnostic{Range: lineRange(f.parsed.text, 0), Severity: protocol.DiagnosticSeverityError, Source: "mutatis", Code: "suite", Message: f.suiteErr.Error()})
		return
	}
	for _, fe := range ie.Errs {
		d := protocol.Diagnostic{Severity: protocol.DiagnosticSeverityError, Source: "mutatis", Code: "suite", Message: fe.ErrorBody(), Range: lineRange(f.parsed.text, 0)}
		if root := f.parsed.root(manifest.Source{Item: -1}); root != nil {
			value, key, whole := fieldNode(root, fe.Field)
			d.Range = nodeRange(f.parsed, value, key, whole)
		}
		a.Diagnostics[path] = append(a.Diagnostics[path], d)
	}
}
