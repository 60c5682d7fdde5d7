package main

import (
	"encoding/json"
	"errors"
	"io"
	"maps"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mutatis-dev/mutatis/cluster"
	"github.com/mutatis-dev/mutatis/explain"
	"github.com/mutatis-dev/mutatis/manifest"
)

// applyResult is what apply -o result prints of one object's admission:
// the object named as -o patch names it, kube-apiserver's answer (allowed,
// its refusal's Status), what -o json and -o patch print of an admitted
// object, the warnings it returns and the audit annotations it records in
// the request's audit event, every stage's.
type applyResult struct {
	Source    string `json:"source"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	Allowed   bool   `json:"allowed"`
	// Object is what -o json prints: the object kube-apiserver would
	// store; absent when refused and for a DELETE.
	Object map[string]any `json:"object,omitempty"`
	// Patch is what -o patch prints: admission's JSON patch; absent when
	// refused and for a DELETE.
	Patch json.RawMessage `json:"patch,omitempty"`
	// Warnings are the request's warnings as kube-apiserver returns them.
	Warnings []string `json:"warnings"`
	// AuditAnnotations are every stage's audit annotations (the mutating
	// webhooks', the built-in validating plugins', the
	// ValidatingAdmissionPolicies', the validating webhooks'), keyed as
	// kube-apiserver records them.
	AuditAnnotations map[string]string `json:"auditAnnotations"`
	// Status is the refusal as kube-apiserver returns it (its code,
	// reason and message), when refused.
	Status *resultStatus `json:"status,omitempty"`
	// Error tells why an object of several was bad input (exit 2); the
	// fields of kube-apiserver's answer are then empty.
	Error string `json:"error,omitempty"`
}

// newApplyResult is the result of the admission out of obj; false when
// the request ended before kube-apiserver would answer it (bad input, a
// failure of mutatis), whose error apply reports.
func newApplyResult(obj manifest.Object, kind, ns, name string, out *cluster.Outcome) (*applyResult, bool) {
	r := badApplyResult(obj, kind, ns, name, "")
	var status *apierrors.StatusError
	switch {
	case out.DecodeErr != nil:
		if !errors.As(out.DecodeErr, &status) {
			return nil, false
		}
		// Refused by the decoder or a built-in admission plugin, with the
		// decoder's warnings.
		if out.Decoded != nil {
			r.Warnings = append(r.Warnings, explain.Returned(out.Decoded.Warnings)[0]...)
		}
		r.Status = statusOf(status)
		return r, true
	case out.ChainErr != nil, out.ObjectErr != nil, out.Err != nil, out.Admission == nil:
		return nil, false
	}
	adm := out.Admission
	for _, w := range explain.Returned(out.Decoded.Warnings, adm.Result.Warnings, adm.Warnings, adm.Validation.Warnings) {
		r.Warnings = append(r.Warnings, w...)
	}
	// The audit event keeps a key's first value (audit.AddAuditAnnotation):
	// the mutating chain's before the validating stage's.
	maps.Copy(r.AuditAnnotations, adm.Result.AuditAnnotations)
	for k, v := range adm.Validation.AuditAnnotations {
		if _, ok := r.AuditAnnotations[k]; !ok {
			r.AuditAnnotations[k] = v
		}
	}
	if status, _ := adm.Refusal(); status != nil {
		r.Status = statusOf(status)
		return r, true
	}
	r.Allowed = true
	if out.Before == nil {
		// A DELETE: no object.
		return r, true
	}
	r.Object = printedObject("json", adm)
	ops, err := objectPatch(out.Before, printedObject("patch", adm))
	if err != nil {
		return nil, false
	}
	if r.Patch, err = json.Marshal(ops); err != nil {
		return nil, false
	}
	return r, true
}

// badApplyResult is the result of obj when it was bad input (why: the
// error's text): nothing of kube-apiserver's answer.
func badApplyResult(obj manifest.Object, kind, ns, name, why string) *applyResult {
	return &applyResult{Source: obj.Source.String(), Kind: kind, Namespace: ns, Name: name, Warnings: []string{}, AuditAnnotations: map[string]string{}, Error: why}
}

// resultStatus is the refusal of a request: the fields of the Status
// kube-apiserver returns that test/e2e holds mutatis' to (its details are
// left out).
type resultStatus struct {
	Kind       string              `json:"kind"`
	APIVersion string              `json:"apiVersion"`
	Status     string              `json:"status"`
	Message    string              `json:"message"`
	Reason     metav1.StatusReason `json:"reason"`
	Code       int32               `json:"code"`
}

// statusOf is the Status of a refusal as kube-apiserver's response
// carries it (kind Status, apiVersion v1, status Failure).
func statusOf(err *apierrors.StatusError) *resultStatus {
	s := err.ErrStatus
	return &resultStatus{Kind: "Status", APIVersion: "v1", Status: metav1.StatusFailure, Message: s.Message, Reason: s.Reason, Code: s.Code}
}

// printApplyResults prints results as -o result does: the one result
// alone, or several as a JSON array in input order.
func printApplyResults(w io.Writer, results []*applyResult, many bool) error {
	var v any = results
	if !many {
		v = results[0]
	}
	// Indented as -o json, but with <, > and & as they are (a source
	// <stdin>, a message quoting an expression).
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
