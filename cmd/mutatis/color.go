package main

import (
	"fmt"
	"io"
	"os"

	"github.com/mutatis-dev/mutatis/explain"
)

// colorMode is the value of --color: auto (color on a terminal, unless
// NO_COLOR is set), always or never. A bare --color means always, as the
// flag meant before it took a value.
type colorMode string

const (
	colorAuto   colorMode = "auto"
	colorAlways colorMode = "always"
	colorNever  colorMode = "never"
)

func (m *colorMode) String() string { return string(*m) }

func (m *colorMode) Set(s string) error {
	switch colorMode(s) {
	case colorAuto, colorAlways, colorNever:
		*m = colorMode(s)
		return nil
	case "true":
		*m = colorAlways
		return nil
	case "false":
		*m = colorNever
		return nil
	}
	return fmt.Errorf("must be auto, always or never, not %q", s)
}

func (m *colorMode) Type() string { return "auto|always|never" }

// colors tells whether output to w is colored: always, never, or in auto
// mode on a terminal when the NO_COLOR environment variable is empty or
// unset (https://no-color.org).
func (m colorMode) colors(w io.Writer) bool {
	switch m {
	case colorAlways:
		return true
	case colorNever:
		return false
	}
	return os.Getenv("NO_COLOR") == "" && explain.IsTerminal(w)
}
