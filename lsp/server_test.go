package lsp

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// client is a test's side of a session with a Server: requests, and the
// diagnostics the server published, by path.
type client struct {
	t    testing.TB
	conn jsonrpc2.Conn
	mu   sync.Mutex
	diag map[string][]protocol.Diagnostic
	msgs []string
	// published signals each publishDiagnostics.
	published chan string
	done      chan error
}

type pipe struct {
	io.Reader
	io.WriteCloser
}

// startServer starts a Server on in-process pipes and initializes it over
// root.
func startServer(t testing.TB, root string) *client {
	t.Helper()
	s, err := NewServer(Options{})
	if err != nil {
		t.Fatal(err)
	}
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	c := &client{t: t, diag: map[string][]protocol.Diagnostic{}, published: make(chan string, 1000), done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { c.done <- s.Serve(ctx, pipe{sr, sw}) }()
	c.conn = jsonrpc2.NewConn(jsonrpc2.NewStream(pipe{cr, cw}))
	c.conn.Go(ctx, func(ctx context.Context, reply jsonrpc2.Replier, req jsonrpc2.Request) error {
		switch req.Method() {
		case protocol.MethodTextDocumentPublishDiagnostics:
			var p protocol.PublishDiagnosticsParams
			if err := json.Unmarshal(req.Params(), &p); err != nil {
				t.Error(err)
			}
			c.mu.Lock()
			c.diag[p.URI.Filename()] = p.Diagnostics
			c.mu.Unlock()
			c.published <- p.URI.Filename()
		case protocol.MethodWindowShowMessage:
			var p protocol.ShowMessageParams
			_ = json.Unmarshal(req.Params(), &p)
			c.mu.Lock()
			c.msgs = append(c.msgs, p.Message)
			c.mu.Unlock()
		}
		return reply(ctx, nil, nil)
	})
	t.Cleanup(func() {
		cancel()
		cw.Close()
		sw.Close()
	})
	var res protocol.InitializeResult
	c.call(protocol.MethodInitialize, protocol.InitializeParams{RootURI: uri.File(root)}, &res)
	if res.Capabilities.CompletionProvider == nil {
		t.Fatalf("initialize: no completion provider in %+v", res.Capabilities)
	}
	c.notify(protocol.MethodInitialized, struct{}{})
	return c
}

func (c *client) call(method string, params, result any) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := c.conn.Call(ctx, method, params, result); err != nil {
		c.t.Fatalf("%s: %v", method, err)
	}
}

func (c *client) notify(method string, params any) {
	c.t.Helper()
	if err := c.conn.Notify(context.Background(), method, params); err != nil {
		c.t.Fatalf("%s: %v", method, err)
	}
}

// open opens path with text and waits for its diagnostics.
func (c *client) open(path, text string) []protocol.Diagnostic {
	c.t.Helper()
	c.drain()
	c.notify(protocol.MethodTextDocumentDidOpen, protocol.DidOpenTextDocumentParams{TextDocument: protocol.TextDocumentItem{URI: uri.File(path), LanguageID: "yaml", Version: 1, Text: text}})
	return c.wait(path)
}

// change replaces path's text and waits for its diagnostics.
func (c *client) change(path, text string, version int32) []protocol.Diagnostic {
	c.t.Helper()
	c.drain()
	c.notify(protocol.MethodTextDocumentDidChange, protocol.DidChangeTextDocumentParams{
		TextDocument:   protocol.VersionedTextDocumentIdentifier{TextDocumentIdentifier: protocol.TextDocumentIdentifier{URI: uri.File(path)}, Version: version},
		ContentChanges: []protocol.TextDocumentContentChangeEvent{{Text: text}},
	})
	return c.wait(path)
}

// drain forgets the diagnostics published so far.
func (c *client) drain() {
	for {
		select {
		case <-c.published:
		default:
			return
		}
	}
}

func (c *client) wait(path string) []protocol.Diagnostic {
	c.t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case p := <-c.published:
			if p == path {
				c.mu.Lock()
				defer c.mu.Unlock()
				return c.diag[path]
			}
		case <-timeout:
			c.t.Fatalf("no diagnostics for %s", path)
		}
	}
}

func (c *client) shutdown() {
	c.t.Helper()
	c.call(protocol.MethodShutdown, nil, nil)
	c.notify(protocol.MethodExit, nil)
	select {
	case err := <-c.done:
		if err != nil {
			c.t.Errorf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		c.t.Error("the server did not exit")
	}
}

// at is the position of the n-th (0-based) occurrence of marker in text,
// moved by delta characters (ASCII text).
func at(t testing.TB, text, marker string, delta int) protocol.Position {
	t.Helper()
	i := strings.Index(text, marker)
	if i < 0 {
		t.Fatalf("no %q in the text", marker)
	}
	i += delta
	line := strings.Count(text[:i], "\n")
	col := i - (strings.LastIndex(text[:i], "\n") + 1)
	return protocol.Position{Line: uint32(line), Character: uint32(col)}
}

// rangeText is the text a range covers.
func rangeText(text string, r protocol.Range) string {
	tx := newText([]byte(text))
	return text[tx.offset(r.Start):tx.offset(r.End)]
}

// golden compares got with testdata/name, rewritten with -update.
func golden(t *testing.T, name string, got any) {
	t.Helper()
	data, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	data = append(data, '\n')
	file := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if string(want) != string(data) {
		t.Errorf("%s differs from the golden file (run with -update to accept):\n%s", name, data)
	}
}

// copyExample copies an example directory of the repository into a
// temporary workspace.
func copyExample(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range names {
		copyTree(t, filepath.Join("..", "examples", name), filepath.Join(dir, name))
	}
	return dir
}

func TestSession(t *testing.T) {
	root := copyExample(t, "sidecar-injection")
	c := startServer(t, root)
	policy := filepath.Join(root, "sidecar-injection", "policy.yaml")
	data, err := os.ReadFile(policy)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	if ds := c.open(policy, text); len(ds) != 0 {
		t.Errorf("diagnostics of the example: %+v", ds)
	}

	// A typo in a read: the CEL error lands on the field's name inside
	// the folded scalar.
	broken := strings.Replace(text, "!object.spec.containers.exists", "!object.spec.containerz.exists", 1)
	ds := c.change(policy, broken, 2)
	checkRanges(t, broken, ds)
	golden(t, "session-diagnostics.json", ds)
	found := false
	for _, d := range ds {
		if rangeText(broken, d.Range) == "containerz" {
			found = true
		}
	}
	if !found {
		t.Errorf("no diagnostic on containerz: %+v", ds)
	}
	c.change(policy, text, 3)

	// Completion of object.spec. in the matchCondition.
	pos := at(t, text, "!object.spec.containers", len("!object.spec."))
	var list protocol.CompletionList
	c.call(protocol.MethodTextDocumentCompletion, protocol.CompletionParams{TextDocumentPositionParams: protocol.TextDocumentPositionParams{TextDocument: protocol.TextDocumentIdentifier{URI: uri.File(policy)}, Position: pos}}, &list)
	labels := labelsOf(list.Items)
	golden(t, "session-completion-object-spec.json", list)
	for _, want := range []string{"containers", "initContainers", "volumes", "nodeName"} {
		if !contains(labels, want) {
			t.Errorf("completion of object.spec.: no %q in %v", want, labels)
		}
	}
	// Inside the ApplyConfiguration literal Object.spec.containers{…}.
	pos = at(t, text, `name: "log-shipper",`, 0)
	c.call(protocol.MethodTextDocumentCompletion, protocol.CompletionParams{TextDocumentPositionParams: protocol.TextDocumentPositionParams{TextDocument: protocol.TextDocumentIdentifier{URI: uri.File(policy)}, Position: pos}}, &list)
	labels = labelsOf(list.Items)
	for _, want := range []string{"name", "image", "env", "securityContext"} {
		if !contains(labels, want) {
			t.Errorf("completion in Object.spec.containers{…}: no %q in %v", want, labels)
		}
	}
	// YAML keys of spec.
	keysText := strings.Replace(text, "  failurePolicy: Fail\n", "  failurePolicy: Fail\n  reinv\n", 1)
	c.change(policy, keysText, 4)
	pos = at(t, keysText, "  reinv\n", len("  reinv"))
	c.call(protocol.MethodTextDocumentCompletion, protocol.CompletionParams{TextDocumentPositionParams: protocol.TextDocumentPositionParams{TextDocument: protocol.TextDocumentIdentifier{URI: uri.File(policy)}, Position: pos}}, &list)
	if labels := labelsOf(list.Items); !contains(labels, "reinvocationPolicy") {
		t.Errorf("completion of spec keys: %v", labels)
	}
	c.change(policy, text, 5)

	// Hover on containers: its type and OpenAPI description, the cost.
	var hover protocol.Hover
	pos = at(t, text, "!object.spec.containers", len("!object.spec.cont"))
	c.call(protocol.MethodTextDocumentHover, protocol.HoverParams{TextDocumentPositionParams: protocol.TextDocumentPositionParams{TextDocument: protocol.TextDocumentIdentifier{URI: uri.File(policy)}, Position: pos}}, &hover)
	if !strings.Contains(hover.Contents.Value, "`object.spec.containers`: `list(object)`") || !strings.Contains(hover.Contents.Value, "static cost") {
		t.Errorf("hover: %q", hover.Contents.Value)
	}
	if got := rangeText(text, *hover.Range); got != "containers" {
		t.Errorf("hover range covers %q", got)
	}
	golden(t, "session-hover.json", hover)

	// Definition: the binding's policyName → the policy's name.
	var locs []protocol.Location
	pos = at(t, text, "policyName: inject", len("policyName: "))
	c.call(protocol.MethodTextDocumentDefinition, protocol.DefinitionParams{TextDocumentPositionParams: protocol.TextDocumentPositionParams{TextDocument: protocol.TextDocumentIdentifier{URI: uri.File(policy)}, Position: pos}}, &locs)
	golden(t, "session-definition.json", relativeLocations(locs, root))
	if len(locs) != 1 || rangeText(text, locs[0].Range) != "inject-logging-sidecar" || locs[0].Range.Start.Line != uint32(strings.Count(text[:strings.Index(text, "name: inject-logging-sidecar")], "\n")) {
		t.Errorf("definition of policyName: %+v", locs)
	}

	// The policy's lens: its binding.
	var lenses []protocol.CodeLens
	c.call(protocol.MethodTextDocumentCodeLens, protocol.CodeLensParams{TextDocument: protocol.TextDocumentIdentifier{URI: uri.File(policy)}}, &lenses)
	if len(lenses) != 1 || lenses[0].Command.Title != "bound by inject-logging-sidecar" || rangeText(text, lenses[0].Range) != "inject-logging-sidecar" {
		t.Errorf("lenses: %+v", lenses)
	}

	// Code action: a policy without reinvocationPolicy.
	noReinv := strings.Replace(text, "  reinvocationPolicy: IfNeeded\n", "", 1)
	ds = c.change(policy, noReinv, 6)
	checkRanges(t, noReinv, ds)
	var actions []protocol.CodeAction
	c.call(protocol.MethodTextDocumentCodeAction, protocol.CodeActionParams{TextDocument: protocol.TextDocumentIdentifier{URI: uri.File(policy)}, Range: protocol.Range{End: protocol.Position{Line: 100}}, Context: protocol.CodeActionContext{Diagnostics: ds}}, &actions)
	if len(actions) == 0 {
		t.Fatalf("no code action for %+v", ds)
	}
	fixed := applyEdits(noReinv, actions[0].Edit.Changes[uri.File(policy)])
	if ds := c.change(policy, fixed, 7); len(ds) != 0 {
		t.Errorf("after %q: %+v", actions[0].Title, ds)
	}
	c.shutdown()
}

// checkRanges holds every diagnostic's range to the text: within it,
// not empty, and, for a CEL error naming a field, on that field.
func checkRanges(t *testing.T, text string, ds []protocol.Diagnostic) {
	t.Helper()
	tx := newText([]byte(text))
	for _, d := range ds {
		s, e := tx.offset(d.Range.Start), tx.offset(d.Range.End)
		if s > e || e > len(text) || (s == e && len(text) > 0) {
			t.Errorf("diagnostic %q: range %v is empty or reversed", d.Message, d.Range)
			continue
		}
		if tx.position(s) != d.Range.Start || tx.position(e) != d.Range.End {
			t.Errorf("diagnostic %q: range %v is not on characters", d.Message, d.Range)
		}
		if i := strings.Index(d.Message, "undeclared reference to '"); i >= 0 {
			name := strings.SplitN(d.Message[i+len("undeclared reference to '"):], "'", 2)[0]
			if got := text[s:e]; got != name {
				t.Errorf("diagnostic %q covers %q", d.Message, got)
			}
		}
	}
}

func applyEdits(text string, edits []protocol.TextEdit) string {
	tx := newText([]byte(text))
	for i := len(edits) - 1; i >= 0; i-- {
		e := edits[i]
		text = text[:tx.offset(e.Range.Start)] + e.NewText + text[tx.offset(e.Range.End):]
	}
	return text
}

// relativeLocations names the files of locs relative to the workspace,
// for golden files.
func relativeLocations(locs []protocol.Location, root string) []protocol.Location {
	out := make([]protocol.Location, len(locs))
	for i, l := range locs {
		rel, _ := filepath.Rel(root, l.URI.Filename())
		out[i] = protocol.Location{URI: uri.URI("workspace:///" + filepath.ToSlash(rel)), Range: l.Range}
	}
	return out
}

func labelsOf(items []protocol.CompletionItem) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.Label)
	}
	return out
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}
