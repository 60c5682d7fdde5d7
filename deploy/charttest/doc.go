// Package charttest renders the Helm chart of deploy/chart with Helm's Go
// library (no helm binary) and compares its objects with the Kustomize
// manifests of deploy/. It is a module of its own so that Helm's
// dependencies, which would move shared modules of mutatis (cel.dev/expr,
// golang.org/x/..., gRPC, OpenTelemetry) to newer versions than
// kube-apiserver 1.37.1 uses, stay out of mutatis' go.mod; `make test`
// runs it (docs/release.md).
package charttest
