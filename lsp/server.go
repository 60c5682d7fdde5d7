package lsp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/mutatis-dev/mutatis/compiler"
)

// Options configure a Server.
type Options struct {
	// Compiler compiles the policies; a new one when nil.
	Compiler *compiler.Compiler
	// MaxFiles bounds the workspace files read at start (0: 2000).
	MaxFiles int
}

// Server is a language server for admission policies over one workspace:
// the YAML and JSON files under its root folder, the documents the client
// has open in place of their files.
type Server struct {
	opts Options
	comp *compiler.Compiler
	conn jsonrpc2.Conn
	// files holds every file by path: read from disk, or the client's
	// text of the documents open.
	files map[string]*fileState
	open  map[string]bool
	root  string
	// analysis is the last analysis of files.
	analysis *Analysis
	cache    policyCache
	// peers keeps the loading of kat, kaptest and Kyverno suites (read
	// from disk by policytest) until a file changes on disk.
	peers    peerCache
	shutdown bool
	// watch is set when the client can register file watchers.
	watch bool
}

// NewServer returns a Server; Serve runs it.
func NewServer(opts Options) (*Server, error) {
	comp := opts.Compiler
	if comp == nil {
		var err error
		if comp, err = compiler.New(); err != nil {
			return nil, err
		}
	}
	if opts.MaxFiles == 0 {
		opts.MaxFiles = 2000
	}
	return &Server{opts: opts, comp: comp, files: map[string]*fileState{}, open: map[string]bool{}}, nil
}

// Serve speaks the Language Server Protocol (JSON-RPC 2.0 with
// Content-Length headers) over rw until the client sends exit, the stream
// ends or ctx is done. A message over 64 MiB ends the session.
func (s *Server) Serve(ctx context.Context, rw io.ReadWriteCloser) error {
	s.conn = jsonrpc2.NewConn(newLimitedStream(rw))
	s.conn.Go(ctx, s.handle)
	select {
	case <-ctx.Done():
		s.conn.Close()
		<-s.conn.Done()
		return ctx.Err()
	case <-s.conn.Done():
	}
	if err := s.conn.Err(); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, errExit) && !strings.Contains(err.Error(), "EOF") {
		return err
	}
	return nil
}

// errExit ends the connection on the client's exit notification.
var errExit = errors.New("exit")

// maxMessage bounds one message's size.
const maxMessage = 64 << 20

// limitedStream is jsonrpc2's header-framed stream whose Read refuses a
// message over maxMessage bytes before allocating it (jsonrpc2's own Read
// allocates whatever a header announces).
type limitedStream struct {
	jsonrpc2.Stream // writes and closes
	in              *bufio.Reader
}

func newLimitedStream(rw io.ReadWriteCloser) *limitedStream {
	return &limitedStream{Stream: jsonrpc2.NewStream(rw), in: bufio.NewReader(rw)}
}

// Read reads one message: headers up to an empty line, then
// Content-Length bytes.
func (s *limitedStream) Read(ctx context.Context) (jsonrpc2.Message, int64, error) {
	for {
		msg, n, err := s.read(ctx)
		if errors.Is(err, errBadMessage) {
			continue // a message that is not JSON-RPC is dropped
		}
		return msg, n, err
	}
}

// errBadMessage is a message whose body is not a JSON-RPC message.
var errBadMessage = errors.New("not a JSON-RPC message")

func (s *limitedStream) read(ctx context.Context) (jsonrpc2.Message, int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	var total, length int64
	for {
		line, err := s.in.ReadString('\n')
		total += int64(len(line))
		if err != nil {
			return nil, total, err
		}
		if len(line) > 1024 {
			return nil, total, fmt.Errorf("header line over 1024 bytes")
		}
		line = strings.TrimSpace(line)
		if line == "" {
			break
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			return nil, total, fmt.Errorf("invalid header line %q", line)
		}
		if strings.EqualFold(strings.TrimSpace(name), "Content-Length") {
			if length, err = strconv.ParseInt(strings.TrimSpace(value), 10, 64); err != nil || length <= 0 || length > maxMessage {
				return nil, total, fmt.Errorf("invalid Content-Length %q (at most %d)", value, maxMessage)
			}
		}
	}
	if length == 0 {
		return nil, total, fmt.Errorf("missing Content-Length header")
	}
	data := make([]byte, length)
	if _, err := io.ReadFull(s.in, data); err != nil {
		return nil, total, err
	}
	total += length
	msg, err := jsonrpc2.DecodeMessage(data)
	if err != nil {
		return nil, total, errBadMessage
	}
	return msg, total, nil
}

// handle answers one request or notification; its errors are answered,
// never returned (a returned error ends the connection), but exit's.
func (s *Server) handle(ctx context.Context, reply jsonrpc2.Replier, req jsonrpc2.Request) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = reply(ctx, nil, fmt.Errorf("internal error in %s: %v", req.Method(), r))
		}
	}()
	if s.shutdown && req.Method() != protocol.MethodExit {
		return reply(ctx, nil, jsonrpc2.NewError(jsonrpc2.InvalidRequest, "the server is shut down"))
	}
	result, herr := s.dispatch(ctx, req)
	if errors.Is(herr, errExit) {
		s.conn.Close()
		return nil
	}
	if _, isCall := req.(*jsonrpc2.Call); !isCall {
		return nil
	}
	return reply(ctx, result, herr)
}

// dispatch runs the method of req and returns its result.
func (s *Server) dispatch(ctx context.Context, req jsonrpc2.Request) (any, error) {
	params := req.Params()
	switch req.Method() {
	case protocol.MethodInitialize:
		var p protocol.InitializeParams
		if err := decode(params, &p); err != nil {
			return nil, err
		}
		return s.initialize(p), nil
	case protocol.MethodInitialized:
		if s.watch {
			// Asked on a goroutine of its own: the client's answer comes
			// through the loop that runs this handler.
			go s.registerWatchers(context.WithoutCancel(ctx))
		}
		return nil, nil
	case protocol.MethodShutdown:
		s.shutdown = true
		return nil, nil
	case protocol.MethodExit:
		return nil, errExit
	case protocol.MethodTextDocumentDidOpen:
		var p protocol.DidOpenTextDocumentParams
		if err := decode(params, &p); err != nil {
			return nil, err
		}
		path := p.TextDocument.URI.Filename()
		s.open[path] = true
		s.files[path] = newFileState(path, []byte(p.TextDocument.Text))
		return nil, s.refresh(ctx)
	case protocol.MethodTextDocumentDidChange:
		var p protocol.DidChangeTextDocumentParams
		if err := decode(params, &p); err != nil {
			return nil, err
		}
		if len(p.ContentChanges) == 0 {
			return nil, nil
		}
		path := p.TextDocument.URI.Filename()
		// Full sync: the last change is the whole text.
		s.files[path] = newFileState(path, []byte(p.ContentChanges[len(p.ContentChanges)-1].Text))
		return nil, s.refresh(ctx)
	case protocol.MethodTextDocumentDidClose:
		var p protocol.DidCloseTextDocumentParams
		if err := decode(params, &p); err != nil {
			return nil, err
		}
		path := p.TextDocument.URI.Filename()
		delete(s.open, path)
		// The file on disk is the workspace's again.
		if data, err := os.ReadFile(path); err == nil && isManifest(path) {
			s.files[path] = newFileState(path, data)
		} else {
			delete(s.files, path)
		}
		s.analysis = nil
		return nil, s.conn.Notify(ctx, protocol.MethodTextDocumentPublishDiagnostics, &protocol.PublishDiagnosticsParams{URI: uri.File(path), Diagnostics: []protocol.Diagnostic{}})
	case protocol.MethodTextDocumentDidSave:
		// kat, kaptest and Kyverno suites are read from disk.
		s.peers = peerCache{}
		return nil, s.refresh(ctx)
	case protocol.MethodWorkspaceDidChangeWatchedFiles:
		var p protocol.DidChangeWatchedFilesParams
		if err := decode(params, &p); err != nil {
			return nil, err
		}
		s.filesChanged(p.Changes)
		return nil, s.refresh(ctx)
	case protocol.MethodTextDocumentCompletion:
		var p protocol.CompletionParams
		if err := decode(params, &p); err != nil {
			return nil, err
		}
		return s.completion(p.TextDocument.URI.Filename(), p.Position), nil
	case protocol.MethodTextDocumentHover:
		var p protocol.HoverParams
		if err := decode(params, &p); err != nil {
			return nil, err
		}
		return s.hover(p.TextDocument.URI.Filename(), p.Position), nil
	case protocol.MethodTextDocumentDefinition:
		var p protocol.DefinitionParams
		if err := decode(params, &p); err != nil {
			return nil, err
		}
		return s.definition(p.TextDocument.URI.Filename(), p.Position), nil
	case protocol.MethodTextDocumentReferences:
		var p protocol.ReferenceParams
		if err := decode(params, &p); err != nil {
			return nil, err
		}
		return s.references(p.TextDocument.URI.Filename(), p.Position, p.Context.IncludeDeclaration), nil
	case protocol.MethodTextDocumentCodeAction:
		var p protocol.CodeActionParams
		if err := decode(params, &p); err != nil {
			return nil, err
		}
		return s.codeActions(p.TextDocument.URI.Filename(), p.Range), nil
	case protocol.MethodTextDocumentCodeLens:
		var p protocol.CodeLensParams
		if err := decode(params, &p); err != nil {
			return nil, err
		}
		return s.codeLenses(p.TextDocument.URI.Filename()), nil
	case protocol.MethodWorkspaceExecuteCommand:
		var p protocol.ExecuteCommandParams
		if err := decode(params, &p); err != nil {
			return nil, err
		}
		return s.executeCommand(ctx, p)
	}
	if strings.HasPrefix(req.Method(), "$/") {
		return nil, nil
	}
	return nil, jsonrpc2.NewError(jsonrpc2.MethodNotFound, "method not supported: "+req.Method())
}

func decode(params json.RawMessage, into any) error {
	if len(params) == 0 {
		return jsonrpc2.NewError(jsonrpc2.InvalidParams, "no params")
	}
	if err := json.Unmarshal(params, into); err != nil {
		return jsonrpc2.NewError(jsonrpc2.InvalidParams, err.Error())
	}
	return nil
}

// CommandRunSuite is the command a suite's code lens runs: its argument
// is the suite file's URI.
const CommandRunSuite = "mutatis.runSuite"

func (s *Server) initialize(p protocol.InitializeParams) *protocol.InitializeResult {
	root := ""
	switch {
	case len(p.WorkspaceFolders) > 0:
		root = uri.URI(p.WorkspaceFolders[0].URI).Filename()
	case p.RootURI != "":
		root = p.RootURI.Filename()
	case p.RootPath != "":
		root = p.RootPath
	}
	s.root = root
	if w := p.Capabilities.Workspace; w != nil && w.DidChangeWatchedFiles != nil && w.DidChangeWatchedFiles.DynamicRegistration {
		s.watch = true
	}
	if root != "" {
		s.readWorkspace(root)
	}
	return &protocol.InitializeResult{
		Capabilities: protocol.ServerCapabilities{
			TextDocumentSync: &protocol.TextDocumentSyncOptions{OpenClose: true, Change: protocol.TextDocumentSyncKindFull},
			CompletionProvider: &protocol.CompletionOptions{
				TriggerCharacters: []string{".", "{", ","},
			},
			HoverProvider:          true,
			DefinitionProvider:     true,
			ReferencesProvider:     true,
			CodeActionProvider:     true,
			CodeLensProvider:       &protocol.CodeLensOptions{},
			ExecuteCommandProvider: &protocol.ExecuteCommandOptions{Commands: []string{CommandRunSuite}},
		},
		ServerInfo: &protocol.ServerInfo{Name: "mutatis"},
	}
}

// registerWatchers asks the client to watch the workspace's manifests
// (workspace/didChangeWatchedFiles): a CRD or a params file changed by
// another program, a git checkout, re-diagnoses the documents open.
func (s *Server) registerWatchers(ctx context.Context) {
	opts := protocol.DidChangeWatchedFilesRegistrationOptions{Watchers: []protocol.FileSystemWatcher{{GlobPattern: "**/*.{yaml,yml,json}"}}}
	_, _ = s.conn.Call(ctx, protocol.MethodClientRegisterCapability, &protocol.RegistrationParams{Registrations: []protocol.Registration{{
		ID: "mutatis-watch", Method: protocol.MethodWorkspaceDidChangeWatchedFiles, RegisterOptions: opts,
	}}}, nil)
}

// filesChanged takes the files changed on disk into the workspace: a
// file created or changed is read again, a deleted one forgotten; the
// documents open keep the client's text.
func (s *Server) filesChanged(changes []*protocol.FileEvent) {
	s.peers = peerCache{}
	for _, c := range changes {
		if c == nil {
			continue
		}
		path := c.URI.Filename()
		if s.open[path] || !isManifest(path) {
			continue
		}
		if c.Type == protocol.FileChangeTypeDeleted {
			delete(s.files, path)
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			delete(s.files, path)
			continue
		}
		if len(s.files) >= s.opts.MaxFiles && s.files[path] == nil {
			continue
		}
		s.files[path] = newFileState(path, data)
	}
}

// readWorkspace reads the manifests under root: *.yaml, *.yml and
// *.json, hidden directories and node_modules left out, up to MaxFiles
// files.
func (s *Server) readWorkspace(root string) {
	n := 0
	_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !isManifest(path) {
			return nil
		}
		if n >= s.opts.MaxFiles {
			return filepath.SkipAll
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		n++
		s.files[path] = newFileState(path, data)
		return nil
	})
}

func isManifest(path string) bool {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// current is the analysis of the files as they are now.
func (s *Server) current() *Analysis {
	if s.analysis == nil {
		s.analysis = analyze(s.comp, s.files, &s.cache)
		s.analysis.peerDiagnostics(&s.peers)
	}
	return s.analysis
}

// refresh analyses the workspace again and publishes the diagnostics of
// the documents open.
func (s *Server) refresh(ctx context.Context) error {
	s.analysis = nil
	a := s.current()
	for path := range s.open {
		ds := a.Diagnostics[path]
		if ds == nil {
			ds = []protocol.Diagnostic{}
		}
		if err := s.conn.Notify(ctx, protocol.MethodTextDocumentPublishDiagnostics, &protocol.PublishDiagnosticsParams{URI: uri.File(path), Diagnostics: ds}); err != nil {
			return err
		}
	}
	return nil
}
