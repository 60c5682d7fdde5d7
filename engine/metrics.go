package engine

import (
	"context"
	"strings"
	"time"
)

// Error types of the apiserver_mutating_admission_policy_check_* metrics.
const (
	ErrorTypeNone        = "no_error"
	ErrorTypeCompile     = "compile_error"
	ErrorTypeInvalid     = "invalid_error"
	ErrorTypeOutOfBudget = "out_of_budget"
)

// Metrics receives one observation per evaluated mutation, as kube-apiserver
// records apiserver_mutating_admission_policy_check_total and
// apiserver_mutating_admission_policy_check_duration_seconds (labels policy,
// policy_binding, error_type). A server exports them; nil records nothing.
type Metrics interface {
	ObserveMutation(ctx context.Context, elapsed time.Duration, policy, binding, errorType string)
}

// ErrorType classifies a mutation error for the metrics exactly as
// kube-apiserver's dispatcher does (by the message prefix).
func ErrorType(err error) string {
	switch {
	case err == nil:
		return ErrorTypeNone
	case strings.HasPrefix(err.Error(), "compilation"):
		return ErrorTypeCompile
	case strings.HasPrefix(err.Error(), "validation failed due to running out of cost budget"):
		return ErrorTypeOutOfBudget
	}
	return ErrorTypeInvalid
}
