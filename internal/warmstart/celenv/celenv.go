// Package celenv starts compiler.Warm at initialisation for the commands
// that compile CEL (see package warmstart): its initialiser runs as soon
// as package compiler's dependencies are initialised. Only package main
// imports it.
package celenv

import (
	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/internal/warmstart"
)

func init() {
	if warmstart.Command() {
		warmstart.Then(compiler.Warm)
	}
}
