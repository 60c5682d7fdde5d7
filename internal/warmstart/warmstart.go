// Package warmstart runs, on the core a one-shot command leaves idle, the
// one-time set-up that command is about to need. Package main starts it
// explicitly (Start, then Then for each warm-up), as the first thing the
// command does; nothing here runs from a package initialiser.
//
// The warm-ups of the commands that compile CEL:
//
//   - Start parses two expressions of the shapes mutations take: cel-go's
//     grammar automaton and the prediction cache its parser shares among
//     all parses are built then (what the first compilation would
//     otherwise pay);
//   - main adds compiler.Warm, the base environments and their plan checks
//     (≈ 5 ms);
//
// and main adds the scheme's registration (scheme.Warm, DecodesObjects)
// for the commands that decode objects. They run one after the other on
// one goroutine (Warmer.Then).
//
// The contract of every warm-up: it only fills process-wide caches that
// are built once anyway, whoever asks first, so no output depends on
// whether or when it ran (TestWarmStartChangesNothing in cmd/mutatis runs
// commands in a process that warms up and compares them with runs that do
// not). Other commands (version, certs, help) start nothing.
//
// Only package main imports this package.
package warmstart

import (
	"github.com/google/cel-go/common"
	"github.com/google/cel-go/parser"
)

// Expressions are parsed by the warm-up: the first parse builds cel-go's
// grammar automaton, and parses of the two shapes every mutation takes (a
// JSONPatch list, an ApplyConfiguration object, with a macro, an optional
// field and literals) fill the prediction cache for them. More shapes cost
// more than the parses they would speed up. Their results are thrown
// away.
var Expressions = []string{
	`[JSONPatch{op: "add", path: "/metadata/labels/" + jsonpatch.escapeKey("a/b"), value: object.metadata.?name.orValue("x")}]`,
	`Object{spec: Object.spec{containers: object.spec.containers.filter(c, c.name != 'x' && has(c.image)).map(c, Object.spec.containers{name: c.name, ports: [1, 2]})}}`,
}

// CompilesCEL tells whether the mutatis command named command compiles
// policies' CEL expressions.
func CompilesCEL(command string) bool {
	switch command {
	case "apply", "test", "lint", "cost", "bench", "migrate-check", "audit", "serve":
		return true
	}
	return false
}

// DecodesObjects tells whether the mutatis command named command decodes
// objects as kube-apiserver does (package scheme), and so would register
// kube-apiserver's API groups (scheme.Warm) on its critical path.
func DecodesObjects(command string) bool {
	switch command {
	case "apply", "test", "bench", "migrate-check", "audit", "serve", "review":
		return true
	}
	return false
}

// Warmer runs warm-ups in order on one goroutine. One goroutine for all of
// them keeps at most one warm-up competing with the command for the two
// cores: a third runnable goroutine could take the core of the command's
// own, which would wait up to the scheduler's 10 ms time slice to get one
// back.
type Warmer struct {
	// queue holds the warm-ups not started yet; nil when Start started no
	// goroutine (a command that compiles no CEL).
	queue chan func()
}

// Start starts the warm-ups of the mutatis command named command: for a
// command that compiles CEL, the goroutine that runs the warm-ups, with
// cel-go's parser tables first (Expressions); for the others nothing.
func Start(command string) *Warmer {
	w := &Warmer{}
	if !CompilesCEL(command) {
		return w
	}
	w.queue = make(chan func(), 4)
	w.queue <- warmParser
	go func() {
		for f := range w.queue {
			f()
		}
	}()
	return w
}

// Then runs f on the warm-up goroutine after the warm-ups given to it
// before, or on a goroutine of its own when Start started none.
func (w *Warmer) Then(f func()) {
	if w.queue == nil {
		go f()
		return
	}
	w.queue <- f
}

// warmParser parses Expressions with the parser options of kube-apiserver's
// environments that change what the grammar reads (optional syntax).
func warmParser() {
	p, err := parser.NewParser(parser.Macros(parser.AllMacros...), parser.EnableOptionalSyntax(true))
	if err != nil {
		return
	}
	for _, src := range Expressions {
		p.Parse(common.NewTextSource(src))
	}
}
