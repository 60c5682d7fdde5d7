// Package oracle is a module of its own (its dependencies, the source
// engines, stay out of mutatis' go.mod, as test/e2e and deploy/charttest
// keep theirs): the commands that record the answers of Gatekeeper and
// Kyverno on the convert corpus, which convert's tests check the converted
// policies against (`make convert-oracle`; docs/migrate.md).
package oracle
