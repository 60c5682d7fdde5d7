package chain

import (
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Validation records one policy × binding × param evaluation of the
// ValidatingAdmissionPolicy stage, or why the policy or binding did not
// evaluate (Skipped): what explain, policytest and audit read.
type Validation struct {
	// Policy and Binding name the evaluation ("" Binding: the policy
	// itself, e.g. its matchConstraints do not select the request).
	Policy, Binding string
	// Param is "namespace/name" of the param, or "" for none.
	Param string
	// Skipped tells why the policy or binding did not evaluate its
	// validations (NotSkipped if it did): SkipPolicyNotSelected,
	// SkipBindingNotSelected, SkipPolicyConfigError, SkipBindingConfigError,
	// SkipParams, SkipNoParams, SkipConversion, SkipMatchConditionFalse
	// (kube-apiserver's validator does not say which condition).
	Skipped Skip
	// Actions are the binding's validationActions (Deny, Warn, Audit).
	Actions []admissionregistrationv1.ValidationAction
	// Decisions are the validations' decisions, one per validation in
	// order; a single error decision when the policy could not be
	// evaluated (a compilation or matchConditions error, a configuration
	// error under failurePolicy Fail).
	Decisions []Decision
	// AuditAnnotations are the policy's auditAnnotations this evaluation
	// published (key → value, before the POLICY/ prefix).
	AuditAnnotations map[string]string
	// Err is the configuration error (policy, binding, params, conversion)
	// behind a skip, before the failure policy.
	Err error
}

// Ran tells whether the evaluation ran its validations.
func (v Validation) Ran() bool { return v.Skipped == NotSkipped }

// SkipMessage is why the evaluation did not run, in words, or "".
func (v Validation) SkipMessage() string { return v.Skipped.String() }

// DecisionAction is what a validation decided: kube-apiserver's
// PolicyDecisionAction ("admit" or "deny").
type DecisionAction string

// The actions.
const (
	DecisionAdmit DecisionAction = "admit"
	DecisionDeny  DecisionAction = "deny"
)

// Decision is one validation's decision (kube-apiserver's PolicyDecision).
type Decision struct {
	Action DecisionAction
	// Error tells the decision comes from an error (evaluation,
	// compilation, matchConditions, cost budget): under failurePolicy
	// Ignore it admits, under Fail it denies.
	Error bool
	// Message is the denial's message (the validation's message,
	// messageExpression or "failed expression: …"), or the error's.
	Message string
	// Reason is the denial's reason (Invalid unless the validation says).
	Reason metav1.StatusReason
	// Elapsed is the evaluation's wall time.
	Elapsed time.Duration
}
