// Package bench holds the side-by-side Go benchmarks of mutatis and
// k8s.io/apiserver's MutatingAdmissionPolicy implementation (its patchers
// and mutating.NewDispatcher, driven with fake informers): the same
// scenarios, in the same binary, named impl=upstream and impl=mutatis so
// that benchstat compares them. `make bench` runs them and writes the tables
// of docs/performance.md with cmd/perfdoc.
package bench
