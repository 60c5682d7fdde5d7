//go:build unix

package manifest

import (
	"os"
	"syscall"
)

// openFlags opens manifest files without blocking: opening a named pipe
// with no writer for reading would otherwise wait for one forever.
// readRegularFile refuses what it opened unless it is a regular file, on
// which the flag has no effect.
const openFlags = os.O_RDONLY | syscall.O_NONBLOCK
