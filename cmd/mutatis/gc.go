package main

import (
	"os"
	"runtime"
	"runtime/debug"
)

// firstCollection is the heap size at which a one-shot command first
// collects garbage (deferCollection).
const firstCollection = 128 << 20

// oneShot are the commands that run once over their inputs and exit:
// most of their runs are short (a pre-commit hook, one object, one
// suite), where the collector's cycles while the heap grows from nothing
// cost a third of the process' time. serve and audit set their own
// memory limits; bench measures.
var oneShot = map[string]bool{
	"apply": true, "test": true, "lint": true, "cost": true, "review": true,
	"migrate-check": true, "version": true, "certs": true,
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

// command is the subcommand args name (the first argument), or "".
func command(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}
