//go:build !unix

package manifest

import "os"

// openFlags opens manifest files (see open_unix.go).
const openFlags = os.O_RDONLY
