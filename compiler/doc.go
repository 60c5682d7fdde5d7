// Package compiler turns MutatingAdmissionPolicies, and
// ValidatingAdmissionPolicies (CompileValidating), into compiled,
// cost-budgeted CEL programs.
//
// It uses the CEL environment kube-apiserver uses for stored expressions
// (k8s.io/apiserver/pkg/cel/environment at the compatibility version of the
// 1.37 binary, with every Kubernetes CEL library), with the same
// declarations: object, oldObject, request, params (only with a paramKind),
// namespaceObject, authorizer, authorizer.requestResource and variables;
// mutation expressions additionally get the Object, Object.<path> and
// JSONPatch types and jsonpatch.escapeKey.
//
// A compiled Policy is immutable and safe for concurrent use. Each
// evaluation binds its inputs in an Activation; variables are evaluated
// lazily, once per Activation, and their cost is charged to the expression
// that uses them first, as kube-apiserver does.
//
// A Compiler created WithObserver also tells an Observer about every
// evaluation, with the outcomes of the nodes of the expression the
// Observer asked to probe when it compiled (coverage probes its decisions:
// package policytest/coverage/decisions). Outcomes come from a second,
// instrumented evaluation; the ordinary one, whose value and cost count, is
// untouched.
package compiler
