// Package gcstart turns the garbage collector off from the start of the
// process for mutatis' one-shot commands, until the heap first reaches
// firstCollection: a short run (a pre-commit hook, one object, one suite)
// never collects, where the collector's cycles while the heap grows from
// nothing — during the packages' initialisation already — were a third of
// its time. Imported (blank) by cmd/mutatis only; its init runs before the
// heavy packages' because it imports nothing but the runtime and os (Go
// initialises ready packages in import-path order).
package gcstart

import (
	"os"
	"runtime"
	"runtime/debug"
)

// firstCollection is the heap size at which a one-shot command first
// collects garbage (deferCollection).
const firstCollection = 128 << 20

// oneShot tells whether command runs once over its inputs and exits:
// most of its runs are short (a pre-commit hook, one object, one suite),
// where the collector's cycles while the heap grows from nothing cost a
// third of the process' time. serve and audit set their own memory
// limits; bench measures.
func oneShot(command string) bool {
	switch command {
	case "apply", "test", "lint", "cost", "review", "migrate-check", "version", "certs":
		return true
	}
	return false
}

// deferCollection turns the garbage collector off until the heap first
// reaches limit bytes, then gives the runtime back its settings: a short
// run never collects, a long one collects as usual after its first cycle
// (the heap then at most limit). It leaves the runtime alone when the
// environment sets GOGC or GOMEMLIMIT.
func deferCollection(limit int64) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	percent := debug.SetGCPercent(-1)
	previous := debug.SetMemoryLimit(limit)
	// The first collection finds the sentinel unreachable and runs its
	// cleanup, which restores the settings.
	sentinel := new([64]byte)
	runtime.AddCleanup(sentinel, func(struct{}) {
		debug.SetGCPercent(percent)
		if debug.SetMemoryLimit(-1) == limit {
			debug.SetMemoryLimit(previous)
		}
	}, struct{}{})
}

func init() {
	if len(os.Args) > 1 && oneShot(os.Args[1]) {
		deferCollection(firstCollection)
	}
}
