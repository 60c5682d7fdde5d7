package chain

import (
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Skip tells why a policy invocation did not run its mutations or a
// webhook was not called: one vocabulary for the stages that match
// requests, in the order they meet the reasons.
type Skip uint8

// The reasons. The first are the policies', then the webhooks' own; a
// false matchCondition and a stage not reinvoked are both's.
const (
	// NotSkipped: the invocation ran its mutations, the webhook was
	// called (or its call attempted).
	NotSkipped Skip = iota
	// SkipPolicyConfigError: the policy cannot be evaluated (it does not
	// compile, or its paramKind is not served); Err says why.
	SkipPolicyConfigError
	// SkipPolicyNotSelected: the policy's matchConstraints do not select
	// the request.
	SkipPolicyNotSelected
	// SkipParamKindInactive: the policy's paramKind cannot be resolved;
	// Err says why.
	SkipParamKindInactive
	// SkipBindingConfigError: the binding cannot be evaluated; Err says
	// why.
	SkipBindingConfigError
	// SkipBindingNotSelected: the binding's matchResources do not select
	// the request.
	SkipBindingNotSelected
	// SkipConversion: the objects could not be converted to the kind the
	// policy matched (matchPolicy Equivalent); Err says why.
	SkipConversion
	// SkipParams: the binding's params could not be resolved; Err says
	// why.
	SkipParams
	// SkipNoParams: no params were found under parameterNotFoundAction
	// Allow.
	SkipNoParams
	// SkipMatchConditionsError: evaluating the policy's matchConditions
	// failed under failurePolicy Fail; Err says why.
	SkipMatchConditionsError
	// SkipMatchConditionsErrorIgnored: evaluating the policy's
	// matchConditions failed under failurePolicy Ignore; Err says why
	// (Records.Ignored has it too).
	SkipMatchConditionsErrorIgnored
	// SkipMatchConditionFalse: a matchCondition is false (the record names
	// it).
	SkipMatchConditionFalse
	// SkipNotReinvoked: the reinvocation round, and the invocation or
	// webhook is not one to reinvoke (reinvocationPolicy Never, not run in
	// the first round, or nothing changed the object after it ran).
	SkipNotReinvoked
	// SkipRules: no rule of the webhook (with matchPolicy Equivalent, no
	// rule on an equivalent resource either) selects the request.
	SkipRules
	// SkipNamespaceSelector: the webhook's namespaceSelector does not
	// select the request's namespace.
	SkipNamespaceSelector
	// SkipObjectSelector: the webhook's objectSelector selects neither the
	// object nor the old object.
	SkipObjectSelector
	// SkipMatchConditionFailedOpen: a webhook's matchCondition failed and
	// its failurePolicy is Ignore.
	SkipMatchConditionFailedOpen
	// SkipExempt: webhooks never see the request (webhook configurations,
	// admission policies, review resources).
	SkipExempt
)

var skipReasons = [...]string{
	NotSkipped:                      "",
	SkipPolicyConfigError:           "policy configuration error",
	SkipPolicyNotSelected:           "policy matchConstraints do not select the request",
	SkipParamKindInactive:           "policy inactive: paramKind",
	SkipBindingConfigError:          "binding configuration error",
	SkipBindingNotSelected:          "binding matchResources do not select the request",
	SkipConversion:                  "conversion to the matched kind",
	SkipParams:                      "params",
	SkipNoParams:                    "no params found (parameterNotFoundAction Allow)",
	SkipMatchConditionsError:        "matchConditions error",
	SkipMatchConditionsErrorIgnored: "matchConditions error ignored",
	SkipMatchConditionFalse:         "a matchCondition is false",
	SkipNotReinvoked:                "not reinvoked",
	SkipRules:                       "no rule matches",
	SkipNamespaceSelector:           "namespaceSelector does not match",
	SkipObjectSelector:              "objectSelector does not match",
	SkipMatchConditionFailedOpen:    "a matchCondition failed (failurePolicy Ignore)",
	SkipExempt:                      "exempt from webhooks",
}

// String is the reason in words ("" for NotSkipped); a Record's
// SkipMessage names a false matchCondition.
func (r Skip) String() string {
	if int(r) < len(skipReasons) {
		return skipReasons[r]
	}
	return "skip reason " + strconv.Itoa(int(r))
}

// Record is what every stage's record of one hook in one round says, in
// one vocabulary: who, which round, whether it was skipped and why, and
// its error. Each stage's record extends it with its own detail
// (Invocation, Call, IgnoredError; the validating stages' to come), so a
// reader can take any record by its common part.
type Record struct {
	// Configuration and Hook identify the hook as its API objects name
	// it: the object that configures it — the policy of a policy
	// invocation, the webhook configuration of a webhook call — and the
	// hook within it: the policy's binding ("" for a record of the policy
	// itself), the webhook.
	Configuration, Hook string
	// Round is the chain's round: 0 the first, 1 the reinvocation round,
	// as kube-apiserver counts rounds (its audit annotations'
	// round_0_index_…). Readers that show "pass N" show Round+1.
	Round int
	// Skip says why the hook did not run (NotSkipped if it ran, or its
	// call was attempted).
	Skip Skip
	// Condition names the matchCondition that was false
	// (SkipMatchConditionFalse).
	Condition string
	// Err is the hook's error, if any: before the failure policy for a
	// policy invocation; a webhook's denial or failure as kube-apiserver
	// words it (a failed-open error included).
	Err error
}

// Ran tells whether the hook ran (or its call was attempted).
func (r Record) Ran() bool { return r.Skip == NotSkipped }

// SkipMessage is why the hook did not run, in words ("matchCondition
// NAME is false"), or "" if it ran. Words are for people; code reads Skip
// and Condition.
func (r Record) SkipMessage() string {
	if r.Skip == SkipMatchConditionFalse && r.Condition != "" {
		return "matchCondition " + r.Condition + " is false"
	}
	return r.Skip.String()
}

// Invocation records one policy × binding × param evaluation of the
// MutatingAdmissionPolicy stage: Configuration is the policy, Hook the
// binding.
type Invocation struct {
	Record
	// Param is "namespace/name" of the param, or "" for none.
	Param string
	// Mutations are the outcomes of the mutations that ran, in order.
	Mutations []MutationOutcome
}

// MutationOutcome describes one evaluated mutation.
type MutationOutcome struct {
	// Cost is the runtime cost of the expression and the variables it used.
	Cost int64
	// Elapsed is the wall time of the whole mutation.
	Elapsed time.Duration
	// Skipped is true when a JSON patch "test" operation failed, which
	// leaves the object unchanged without error.
	Skipped bool
	// Err is the mutation's error, if any (before the failure policy).
	Err error
}

// IgnoredError is an error of a policy whose failurePolicy is Ignore: a
// mutation that failed, matchConditions that could not be evaluated, or a
// policy or binding that cannot be configured. Configuration is the
// policy, Hook the binding ("" for an error of the policy itself), Err
// the error itself; Skip is the invocation's.
type IgnoredError struct {
	Record
	// Mutation is the index of the mutation that failed, or -1 when the
	// error is not a mutation's.
	Mutation int
	// Message is the error as a denial would have worded it under
	// failurePolicy Fail ("policy 'p' with binding 'b' denied request: …").
	Message string
}

// CallOutcome is what came of a webhook's call.
type CallOutcome int

// The outcomes of a call.
const (
	// NotCalled: the webhook was skipped (Call.Skip says why).
	NotCalled CallOutcome = iota
	// Admitted: the webhook allowed the request (with or without a patch).
	Admitted
	// Denied: the webhook answered allowed: false.
	Denied
	// FailedOpen: the call failed and failurePolicy Ignore let the
	// request through.
	FailedOpen
	// FailedClosed: the call failed and failurePolicy Fail (the default)
	// refused the request.
	FailedClosed
	// Refused: kube-apiserver refused the request whatever the
	// failurePolicy (dry run on a webhook with side effects, a patch that
	// does not apply or decode, a patch for an operation without object).
	Refused
)

var callOutcomes = [...]string{
	NotCalled:    "not called",
	Admitted:     "admitted",
	Denied:       "denied",
	FailedOpen:   "failed open",
	FailedClosed: "failed closed",
	Refused:      "refused",
}

// String names the outcome.
func (o CallOutcome) String() string {
	if o >= 0 && int(o) < len(callOutcomes) {
		return callOutcomes[o]
	}
	return "Outcome(" + strconv.Itoa(int(o)) + ")"
}

// Call records one webhook's part in a round of the
// MutatingAdmissionWebhook stage, whether it was called or not: what
// --explain shows. Configuration is the webhook configuration, Hook the
// webhook; Err is the webhook's denial or the call's failure.
type Call struct {
	Record
	// Index is the webhook's position among all webhooks of the round, as
	// kube-apiserver's audit annotations count it.
	Index int
	// Resource and Kind are what the webhook registered for (an
	// equivalent resource under matchPolicy Equivalent).
	Resource schema.GroupVersionResource
	Kind     schema.GroupVersionKind
	// Version is the AdmissionReview version sent ("" if none).
	Version string
	// Latency is the time of the HTTP call.
	Latency time.Duration
	// Patch is the webhook's patch (JSON), PatchType its type.
	Patch     []byte
	PatchType string
	// Changed reports whether the patch changed the object.
	Changed bool
	// Reinvocable is set for reinvocationPolicy IfNeeded.
	Reinvocable bool
	Outcome     CallOutcome
}
