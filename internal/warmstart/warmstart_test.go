package warmstart

import "testing"

// TestCompilesCEL: the commands that compile policies start the warm-up;
// the ones that do not (and flags, help, nothing) start nothing.
func TestCompilesCEL(t *testing.T) {
	for command, want := range map[string]bool{
		"apply": true, "test": true, "lint": true, "cost": true, "bench": true,
		"audit": true, "serve": true, "migrate-check": true,
		"version": false, "certs": false, "review": false, "help": false,
		"--version": false, "-h": false, "completion": false, "": false,
	} {
		if got := compilesCEL(command); got != want {
			t.Errorf("compilesCEL(%q) = %v, want %v", command, got, want)
		}
	}
}
