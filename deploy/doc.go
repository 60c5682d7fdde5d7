// Package deploy holds the Kustomize manifests that install mutatis
// (base/, and the cert-manager/ and self-signed/ overlays) and the tests that
// render them. The shadow CustomResourceDefinitions under base/crds are
// generated from the admissionregistration.k8s.io/v1 OpenAPI schema of
// Kubernetes 1.37.1: run `go generate ./deploy` after changing the tag. The
// Helm chart (chart/) ships the same objects; chart/files/crds is generated
// with base/crds, and deploy/charttest (a module of its own) renders the
// chart and compares it with the overlays.
package deploy

//go:generate go run ./internal/crdgen -kubernetes v1.37.1 -out base/crds
//go:generate go run ./internal/crdgen -kubernetes v1.37.1 -out chart/files/crds
