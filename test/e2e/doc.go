// Package e2e holds mutatis' end-to-end tests against a real kube-apiserver
// v1.37.1 and etcd, built from the Go module proxy by test/e2e/build.sh and
// started on 127.0.0.1 by the tests themselves (no Docker, no kind).
//
// `make e2e` builds the binaries (cached under .cache/e2e) and runs the
// tests; without the binaries the tests skip. See docs/e2e.md.
package e2e
