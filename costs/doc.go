// Package costs is the static cost analysis of MutatingAdmissionPolicies:
// the worst-case cost kube-apiserver's CEL cost model gives each
// expression, with the sizes the schemas of custom resources allow
// (EstimateWithSchema), the inputs that drive a worst case and why nothing
// bounds them better (ExplainCost, Driver), and the per-call limit and the
// two runtime budgets checked for every kind a policy targets (Analyze,
// Report). `mutatis cost` prints its Report and `mutatis lint` its
// Estimates; the runtime side, what expressions cost when they run, is
// package harness (`mutatis bench`).
//
// The compiler gives each expression its estimate without sizes
// (compiler.Expression.Cost) and estimates with any sizes on request
// (compiler.Expression.EstimateCost); everything else is here.
package costs
