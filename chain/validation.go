package chain

import (
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Validation records one policy × binding × param evaluation of the
// ValidatingAdmissionPolicy stage, or why the policy or binding did not
// evaluate (Skip): what explain, policytest and audit read.
type Validation struct {
	// Record is the evaluation's identity and skip, in the vocabulary of
	// every stage's records: Configuration the policy, Hook the binding
	// ("" for a record of the policy itself, e.g. its matchConstraints do
	// not select the request), Round 0 (the validating list runs once),
	// Skip why the policy or binding did not evaluate its validations
	// (NotSkipped if it did): SkipPolicyNotSelected,
	// SkipBindingNotSelected, SkipPolicyConfigError, SkipBindingConfigError,
	// SkipParams, SkipNoParams, SkipConversion, SkipMatchConditionFalse
	// (kube-apiserver's validator does not say which condition, so
	// Condition stays ""), and Err the configuration error (policy,
	// binding, params, conversion) behind a skip, before the failure
	// policy.
	Record
	// Param is "namespace/name" of the param, or "" for none.
	Param string
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
}

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
