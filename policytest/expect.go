package policytest

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"gomodules.xyz/jsonpatch/v2"
	jsonpatchv4 "gopkg.in/evanphx/json-patch.v4"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mutatis-dev/mutatis/applyconfig"
	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/explain"
	"github.com/mutatis-dev/mutatis/scheme/admissionplugins"
)

// Failure is one expectation that did not hold.
type Failure struct {
	// Expectation is the field of `expect` that failed (e.g.
	// "objectContains"), or "admitted" for an unexpected denial, or
	// "idempotence" / "shuffle" for the runner's checks.
	Expectation string `json:"expectation"`
	// Message says what was wrong, in one or a few lines.
	Message string `json:"message"`
	// Diff is a unified diff of expected vs actual YAML, when there is one.
	Diff string `json:"diff,omitempty"`

	// field and actual are what --update writes (Report.Update): the
	// path of the expectation under `expect` and the actual value; field
	// is nil for a failure that no value of an expectation mends.
	field  []string
	actual any
}

// String formats the failure as the text output prints it (uncolored).
func (f Failure) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s\n", f.Expectation, f.Message)
	if f.Diff != "" {
		b.WriteString(f.Diff)
		if !strings.HasSuffix(f.Diff, "\n") {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// outcome is what a check looks at: the request's object as it went in
// (normalized as the engine presents it) and the engine's result.
type outcome struct {
	gvk     schema.GroupVersionKind
	before  map[string]any
	result  chain.Result
	schemas *applyconfig.Schemas
	// normalize presents an expected whole object as the engine holds
	// objects of its kind.
	normalize func(map[string]any) (map[string]any, error)
	// invalid is the refusal of the admitted object by API validation.
	invalid *apierrors.StatusError
	// warnings are every warning of the request: the decoder's, the
	// chain's, the registry strategy's and the validating stage's.
	warnings []string
	// validation is the validating stage's result (cluster.Admission's).
	validation chain.Result
	// plugins are the steps of the admission plugins before MAP.
	plugins []admissionplugins.Step
}

// expectations are the resolved expectations of a case (files read).
type expectations struct {
	object, objectContains map[string]any
	patch                  Patch
	hasPatch               bool
	unchanged              bool
	denied                 *Denial
	invalid                *regexp.Regexp
	applied, notApplied    []string
	maxRuntimeCost         map[string]int64
	ignoredErrors          []*regexp.Regexp
	warnings               []*regexp.Regexp
	auditAnnotations       map[string]string
	validationFailures     []ValidationFailure
}

// checkIgnored compares the errors failurePolicy Ignore dropped with
// expect.ignoredErrors: every expression must match one of them; the
// ignored errors no expression matches are returned as warnings, or as
// failures when strict.
func (e *expectations) checkIgnored(r chain.Result, strict bool) (fs []Failure, warnings []string) {
	texts := explain.IgnoredWarnings(r)
	matched := make([]bool, len(r.Ignored))
	for _, re := range e.ignoredErrors {
		found := false
		for i, ig := range r.Ignored {
			if re.MatchString(ig.Message) {
				found, matched[i] = true, true
			}
		}
		if !found {
			msg := fmt.Sprintf("no error ignored by failurePolicy Ignore matches %q", re)
			if len(r.Ignored) > 0 {
				msg += "; ignored:\n" + strings.Join(texts, "\n")
			}
			fs = append(fs, Failure{Expectation: "ignoredErrors", Message: msg})
		}
	}
	for i := range r.Ignored {
		if matched[i] {
			continue
		}
		if strict {
			fs = append(fs, Failure{Expectation: "ignoredErrors", Message: "unexpected " + texts[i] + " (list it under expect.ignoredErrors)"})
		} else {
			warnings = append(warnings, texts[i])
		}
	}
	return fs, warnings
}

func diffText(expected, actual any) string {
	return diffLabelled("expected", "actual", expected, actual)
}

// check returns every expectation of e that o does not meet.
func (e *expectations) check(o outcome) []Failure {
	var fs []Failure
	r := o.result
	fs = append(fs, e.checkInvocations(o)...)
	fs = append(fs, e.checkValidating(o)...)
	denied, deniedBy := r.Denied, r.DeniedBy
	if denied == nil && o.invalid == nil {
		// The validating stage runs on what the registry would store.
		denied, deniedBy = o.validation.Denied, o.validation.DeniedBy
	}
	if e.denied != nil {
		if denied == nil {
			diff, _ := explain.Diff("input", "admitted", canonical(o.before), canonical(r.Object))
			return append(fs, Failure{Expectation: "denied", Message: "the request was admitted", Diff: diff})
		}
		st := denied.ErrStatus
		if e.denied.By != "" && e.denied.By != deniedBy {
			fs = append(fs, Failure{Expectation: "denied.by", Message: fmt.Sprintf("the request was refused by %s, want %s: %s", deniedBy, e.denied.By, st.Message), field: []string{"denied", "by"}, actual: deniedBy})
		}
		if e.denied.Message != "" && !strings.Contains(st.Message, e.denied.Message) {
			fs = append(fs, Failure{Expectation: "denied.message", Message: fmt.Sprintf("the denial message does not contain %q:\n%s", e.denied.Message, st.Message), field: []string{"denied", "message"}, actual: st.Message})
		}
		if e.denied.MessageRegex != "" {
			if re, err := regexp.Compile(e.denied.MessageRegex); err != nil || !re.MatchString(st.Message) {
				fs = append(fs, Failure{Expectation: "denied.messageRegex", Message: fmt.Sprintf("the denial message does not match %q:\n%s", e.denied.MessageRegex, st.Message), field: []string{"denied", "messageRegex"}, actual: "^" + regexp.QuoteMeta(st.Message) + "$"})
			}
		}
		if e.denied.Code != 0 && e.denied.Code != st.Code {
			fs = append(fs, Failure{Expectation: "denied.code", Message: fmt.Sprintf("the denial has code %d, want %d: %s", st.Code, e.denied.Code, st.Message), field: []string{"denied", "code"}, actual: int64(st.Code)})
		}
		return fs
	}
	if r.Denied != nil {
		return append(fs, Failure{Expectation: "admitted", Message: "the request was denied: " + r.Denied.ErrStatus.Message})
	}
	if denied != nil {
		fs = append(fs, Failure{Expectation: "admitted", Message: "the request was refused by " + deniedBy + ": " + denied.ErrStatus.Message})
	}
	switch {
	case e.invalid != nil && o.invalid == nil:
		fs = append(fs, Failure{Expectation: "invalid", Message: fmt.Sprintf("the admitted object is valid, want a refusal matching %q", e.invalid)})
	case e.invalid != nil && !e.invalid.MatchString(o.invalid.ErrStatus.Message):
		fs = append(fs, Failure{Expectation: "invalid", Message: fmt.Sprintf("the validation refusal does not match %q:\n%s", e.invalid, o.invalid.ErrStatus.Message)})
	case e.invalid == nil && o.invalid != nil:
		fs = append(fs, Failure{Expectation: "valid", Message: "kube-apiserver would refuse the admitted object: " + o.invalid.ErrStatus.Message})
	}
	if e.object != nil {
		want := e.object
		if o.normalize != nil {
			if n, err := o.normalize(want); err == nil {
				want = n
			} else {
				fs = append(fs, Failure{Expectation: "object", Message: fmt.Sprintf("the expected object does not decode as a %s: %v", o.gvk.Kind, err)})
			}
		}
		if !equal(want, r.Object) {
			fs = append(fs, Failure{Expectation: "object", Message: "the final object differs", Diff: diffText(want, r.Object), field: []string{"object"}, actual: canonical(r.Object)})
		}
	}
	if e.objectContains != nil {
		ls := schemaFor(o.schemas, o.gvk, r.Object)
		got := ls.project(ls.tr, e.objectContains, r.Object)
		if !equal(e.objectContains, got) {
			fs = append(fs, Failure{Expectation: "objectContains", Message: "the final object does not contain the expected fields", Diff: diffText(e.objectContains, got), field: []string{"objectContains"}, actual: canonical(got)})
		}
	}
	if e.hasPatch {
		if f, ok := checkPatch(e.patch, o.before, r.Object); !ok {
			fs = append(fs, f)
		}
	}
	if e.unchanged && !equal(o.before, r.Object) {
		fs = append(fs, Failure{Expectation: "unchanged", Message: "the policies changed the object", Diff: diffText(o.before, r.Object)})
	}
	return fs
}

// actualPatch is the JSON patch from before to after, sorted by path as
// `mutatis apply -o patch` prints it.
func actualPatch(before, after map[string]any) ([]jsonpatch.Operation, error) {
	a, err := json.Marshal(before)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(after)
	if err != nil {
		return nil, err
	}
	ops, err := jsonpatch.CreatePatch(a, b)
	if err != nil {
		return nil, err
	}
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].Path < ops[j].Path })
	if ops == nil {
		ops = []jsonpatch.Operation{}
	}
	return ops, nil
}

// checkPatch compares by effect: the expected patch, applied to the input,
// must give the final object.
func checkPatch(want Patch, before, after map[string]any) (Failure, bool) {
	got, err := actualPatch(before, after)
	if err != nil {
		return Failure{Expectation: "patch", Message: "computing the actual patch: " + err.Error()}, false
	}
	wantJSON, err := json.Marshal(want)
	if err != nil {
		return Failure{Expectation: "patch", Message: err.Error()}, false
	}
	if want == nil {
		wantJSON = []byte("[]")
	}
	p, err := jsonpatchv4.DecodePatch(wantJSON)
	if err != nil {
		return Failure{Expectation: "patch", Message: "the expected patch is not a JSON patch: " + err.Error()}, false
	}
	in, err := json.Marshal(before)
	if err != nil {
		return Failure{Expectation: "patch", Message: err.Error()}, false
	}
	applied, err := p.Apply(in)
	if err == nil {
		var obj map[string]any
		if err = json.Unmarshal(applied, &obj); err == nil && equal(obj, after) {
			return Failure{}, true
		}
	}
	msg := "the final object is not the input with the expected patch applied"
	if err != nil {
		msg = "the expected patch does not apply to the input: " + err.Error()
	}
	gotJSON, _ := json.Marshal(got)
	var gotAny any
	_ = json.Unmarshal(gotJSON, &gotAny)
	return Failure{Expectation: "patch", Message: msg + "\nactual patch: " + string(gotJSON), Diff: diffText(want, gotAny), field: []string{"patch"}, actual: gotAny}, false
}

// applied tells whether an invocation of the named policy (and binding,
// "policy/binding") ran its mutations, or whether the named webhook
// ("webhook:CONFIGURATION/WEBHOOK", or any webhook of
// "webhook:CONFIGURATION") was called and admitted the request.
func applied(o outcome, name string) bool {
	if hook, ok := strings.CutPrefix(name, webhookPrefix); ok {
		config, webhook, _ := strings.Cut(hook, "/")
		// The mutating webhooks' calls, then the validating ones'.
		for _, c := range slices.Concat(o.result.Calls, o.validation.Calls) {
			if c.Configuration == config && (webhook == "" || c.Hook == webhook) && c.Outcome == chain.Admitted {
				return true
			}
		}
		return false
	}
	policy, bind, _ := strings.Cut(name, "/")
	for _, inv := range o.result.Invocations {
		if inv.Configuration == policy && (bind == "" || inv.Hook == bind) && inv.Ran() && inv.Hook != "" {
			return true
		}
	}
	// A ValidatingAdmissionPolicy applies when a binding of it evaluated
	// its validations.
	for _, v := range o.validation.Validations {
		if v.Configuration == policy && (bind == "" || v.Hook == bind) && v.Ran() && v.Hook != "" {
			return true
		}
	}
	return false
}

func (e *expectations) checkInvocations(o outcome) []Failure {
	var fs []Failure
	r := o.result
	trace := func() string {
		var b strings.Builder
		explain.Chain(&b, r)
		return strings.TrimSuffix(b.String(), "\n")
	}
	for _, n := range e.applied {
		if !applied(o, n) {
			fs = append(fs, Failure{Expectation: "applied", Message: fmt.Sprintf("%s did not apply\n%s", n, trace())})
		}
	}
	for _, n := range e.notApplied {
		if applied(o, n) {
			fs = append(fs, Failure{Expectation: "notApplied", Message: fmt.Sprintf("%s applied\n%s", n, trace())})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(e.maxRuntimeCost)) {
		limit := e.maxRuntimeCost[k]
		policy, mutation, _ := parseCostKey(k)
		cost, ran := int64(0), false
		for _, inv := range r.Invocations {
			if inv.Configuration != policy || len(inv.Mutations) == 0 {
				continue
			}
			var c int64
			if mutation < 0 {
				for _, m := range inv.Mutations {
					c += m.Cost
				}
			} else if mutation < len(inv.Mutations) {
				c = inv.Mutations[mutation].Cost
			} else {
				continue
			}
			ran = true
			cost = max(cost, c)
		}
		switch {
		case !ran:
			fs = append(fs, Failure{Expectation: "maxRuntimeCost", Message: fmt.Sprintf("%s: no such mutation ran, so its cost is unknown", k)})
		case cost > limit:
			fs = append(fs, Failure{Expectation: "maxRuntimeCost", Message: fmt.Sprintf("%s: runtime cost %d exceeds %d", k, cost, limit)})
		}
	}
	return fs
}

// validationFailureAnnotation is the audit annotation of kube-apiserver's
// ValidatingAdmissionPolicy plugin that lists the failed validations of
// bindings with the Audit action (k8s.io/apiserver
// plugin/policy/validating, dispatcher.go).
const validationFailureAnnotation = "validation.policy.admission.k8s.io/validation_failure"

// auditAnnotations are every audit annotation of the request: the
// mutating chain's and the validating stage's.
func (o outcome) auditAnnotations() map[string]string {
	out := make(map[string]string, len(o.result.AuditAnnotations)+len(o.validation.AuditAnnotations))
	maps.Copy(out, o.result.AuditAnnotations)
	maps.Copy(out, o.validation.AuditAnnotations)
	return out
}

// validationFailures are the failures the request's
// validationFailureAnnotation lists.
func (o outcome) validationFailures() ([]ValidationFailure, error) {
	text, ok := o.auditAnnotations()[validationFailureAnnotation]
	if !ok {
		return nil, nil
	}
	var out []ValidationFailure
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		return nil, fmt.Errorf("%s: %w", validationFailureAnnotation, err)
	}
	return out, nil
}

// matches tells whether the actual failure got meets the expected one f.
func (f ValidationFailure) matches(got ValidationFailure) bool {
	return f.Policy == got.Policy &&
		(f.Binding == "" || f.Binding == got.Binding) &&
		strings.Contains(got.Message, f.Message) &&
		(f.ExpressionIndex == nil || got.ExpressionIndex != nil && *f.ExpressionIndex == *got.ExpressionIndex) &&
		(f.ValidationActions == nil || slices.Equal(f.ValidationActions, got.ValidationActions))
}

// checkValidating checks the expectations on what the validating stage
// (and the rest of the chain) leaves beside the object: warnings, audit
// annotations and validation failures.
func (e *expectations) checkValidating(o outcome) []Failure {
	var fs []Failure
	if len(e.warnings) > 0 {
		quoted := make([]any, len(o.warnings))
		for i, w := range o.warnings {
			quoted[i] = "^" + regexp.QuoteMeta(w) + "$"
		}
		for _, re := range e.warnings {
			if !slices.ContainsFunc(o.warnings, re.MatchString) {
				fs = append(fs, Failure{Expectation: "warnings", Message: fmt.Sprintf("no warning matches %q; warnings:\n%s", re, strings.Join(o.warnings, "\n")), field: []string{"warnings"}, actual: quoted})
			}
		}
	}
	if len(e.auditAnnotations) > 0 {
		got := o.auditAnnotations()
		for _, k := range slices.Sorted(maps.Keys(e.auditAnnotations)) {
			if v, ok := got[k]; !ok || v != e.auditAnnotations[k] {
				// --update writes the expected keys' actual values (those
				// the request leaves), not every annotation.
				actual := make(map[string]any, len(e.auditAnnotations))
				for k := range e.auditAnnotations {
					if v, ok := got[k]; ok {
						actual[k] = v
					}
				}
				fs = append(fs, Failure{Expectation: "auditAnnotations", Message: fmt.Sprintf("audit annotation %q is %q, want %q", k, v, e.auditAnnotations[k]), Diff: diffText(e.auditAnnotations, got), field: []string{"auditAnnotations"}, actual: actual})
				break
			}
		}
	}
	if len(e.validationFailures) > 0 {
		got, err := o.validationFailures()
		if err != nil {
			return append(fs, Failure{Expectation: "validationFailures", Message: err.Error()})
		}
		for _, want := range e.validationFailures {
			if !slices.ContainsFunc(got, want.matches) {
				fs = append(fs, Failure{Expectation: "validationFailures", Message: fmt.Sprintf("no validation failure of policy %q matches", want.Policy), Diff: diffText(e.validationFailures, got), field: []string{"validationFailures"}, actual: jsonValue(got)})
				break
			}
		}
	}
	return fs
}

// jsonValue is v as its JSON makes it (maps, slices, strings, numbers):
// what --update writes of a value with JSON field names.
func jsonValue(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil
	}
	return out
}
