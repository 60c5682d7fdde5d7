// Package warmstart starts, while a one-shot command's process is still
// initialising its packages, the one-time set-up that command is about to
// need, on the core the initialisation leaves idle.
//
// Go runs package initialisers one after another on one goroutine: for
// mutatis, ≈ 20 ms of upstream's (client-go's schemes, Kubernetes' feature
// gates and API groups, metrics registries), most of them after the
// packages CEL needs are ready. This package's initialiser runs as soon as
// package compiler's dependencies are (its import path sorts before the
// k8s.io ones, and Go initialises the first ready package in that order),
// and for the commands that compile CEL it starts compiler.Warm in a
// goroutine: the base environments, their plan checks and cel-go's parser
// tables, ≈ 10 ms that a one-object apply or a one-case test would
// otherwise pay on its critical path. Warm only fills process-wide caches
// that are built once anyway, so no result depends on whether or when it
// ran. Other commands (version, certs, help) start nothing.
//
// Only package main imports it.
package warmstart

import (
	"os"

	"github.com/mutatis-dev/mutatis/compiler"
)

// compilesCEL tells whether the mutatis command named command compiles
// policies' CEL expressions.
func compilesCEL(command string) bool {
	switch command {
	case "apply", "test", "lint", "cost", "bench", "migrate-check", "audit", "serve":
		return true
	}
	return false
}

func init() {
	if len(os.Args) > 1 && compilesCEL(os.Args[1]) {
		go compiler.Warm()
	}
}
