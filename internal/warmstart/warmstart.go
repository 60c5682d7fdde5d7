// Package warmstart starts, while a one-shot command's process is still
// initialising its packages, the one-time set-up that command is about to
// need, on the core the initialisation leaves idle.
//
// Go runs package initialisers one after another on one goroutine: for
// mutatis, ≈ 20 ms of upstream's (client-go's schemes, Kubernetes' feature
// gates and API groups, metrics registries), during which the second core
// has nothing to do. Go initialises, of the packages whose dependencies
// are ready, the first by import path, and github.com/mutatis-dev/… sorts
// before the k8s.io/… packages that take most of the time: so a package
// of this module runs its initialiser as soon as what it imports is
// ready. Two such packages start the set-up of the commands that compile
// CEL:
//
//   - this one imports only cel-go's parser, ready about a third into the
//     initialisation, and parses two expressions of the shapes mutations
//     take: cel-go's grammar automaton and the prediction cache its
//     parser shares among all parses are built then (what the first
//     compilation would otherwise pay);
//   - warmstart/celenv imports package compiler and runs compiler.Warm,
//     the base environments and their plan checks (≈ 5 ms).
//
// and main adds the scheme's registration (scheme.Warm, DecodesObjects),
// which needs packages initialised last. They run one after the other on
// one goroutine (Then).
//
// The contract of every warm-up: it only fills process-wide caches that
// are built once anyway, whoever asks first, so no output depends on
// whether or when it ran (TestWarmStartChangesNothing in cmd/mutatis runs
// commands in a process that warms up and compares them with runs that do
// not). Other commands (version, certs, help) start nothing.
//
// Only package main imports these packages.
package warmstart

import (
	"os"

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

// command is the mutatis command the process runs, or "".
func command() string {
	if len(os.Args) > 1 {
		return os.Args[1]
	}
	return ""
}

// Command tells whether the process runs a command that compiles CEL:
// the condition of the warm-ups started at initialisation.
func Command() bool { return CompilesCEL(command()) }

// queue holds the warm-ups not started yet, which one goroutine runs in
// order; nil when the process runs no warm-up at initialisation. It is set
// once, by init, before any other code of the process can read it.
var queue chan func()

// Then runs f on the warm-up goroutine after the warm-ups given to it
// before, or on a goroutine of its own when the process started none. One
// goroutine for all of them keeps at most one warm-up competing with the
// command for the two cores: a third runnable goroutine could take the
// core of the command's own, which would wait up to the scheduler's 10 ms
// time slice to get one back.
func Then(f func()) {
	if queue == nil {
		go f()
		return
	}
	queue <- f
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

func init() {
	if !Command() {
		return
	}
	queue = make(chan func(), 4)
	queue <- warmParser
	go func() {
		for f := range queue {
			f()
		}
	}()
}
