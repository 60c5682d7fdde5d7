package explain

import (
	"fmt"
	"io"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	psaapi "k8s.io/pod-security-admission/api"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/scheme/admissionplugins"
)

// ValidatingStage writes the validating stage of an admission, r (what
// cluster.Admission.Validation holds: the validating list kube-apiserver
// runs once after the registry's validation), read whole, in
// "explain: validating …" lines, in kube-apiserver's order: the built-in
// plugins that validate before the policies and their decision (those
// that admitted on one line, a refusal on its own; PodSecurity with the
// level it enforced or its exemption), each
// ValidatingAdmissionPolicy evaluation (policy × binding × param: why it
// was skipped, or its binding's validationActions and each decision:
// admit, deny with its reason and message, an error and what the failure
// policy made of it; the auditAnnotations it published), each validating
// webhook's call, the plugins after the webhooks; then the stage's
// verdict (admitted, or the refusal, its code, reason and message, and
// the plugin that refused), its audit annotations (by key) and its
// warnings (each text once, as kube-apiserver returns them).
func ValidatingStage(w io.Writer, r chain.Result) {
	var before, after []admissionplugins.Step
	for _, st := range r.PluginSteps {
		if afterWebhooks(st.Plugin) {
			after = append(after, st)
		} else {
			before = append(before, st)
		}
	}
	validatingPluginSteps(w, "before the policies", before, r.AuditAnnotations)
	for _, v := range r.Validations {
		validation(w, v)
	}
	validatingWebhooks(w, r.Calls)
	validatingPluginSteps(w, "after the webhooks", after, r.AuditAnnotations)
	switch {
	case r.Denied != nil:
		st := r.Denied.ErrStatus
		fmt.Fprintf(w, "explain: validating: refused by %s (%d %s): %s\n", r.DeniedBy, st.Code, st.Reason, st.Message)
	case len(r.PluginSteps)+len(r.Validations)+len(r.Calls) == 0:
		fmt.Fprintln(w, "explain: validating: admitted: no validating plugin, policy or webhook handled the request")
	default:
		fmt.Fprintln(w, "explain: validating: admitted")
	}
	auditAnnotations(w, "explain: validating: audit annotation ", r.AuditAnnotations)
	for _, text := range Returned(r.Warnings)[0] {
		fmt.Fprintf(w, "explain: validating: warning: %s\n", text)
	}
}

// afterWebhooks tells whether the built-in plugin named name validates
// after the ValidatingAdmissionWebhook plugin (ResourceQuota, AlwaysDeny):
// after it in kube-apiserver's order (admissionplugins.All).
func afterWebhooks(name string) bool {
	i := slices.IndexFunc(admissionplugins.All, func(p admissionplugins.Plugin) bool { return p.Name == name })
	vwh := slices.IndexFunc(admissionplugins.All, func(p admissionplugins.Plugin) bool { return p.Name == "ValidatingAdmissionWebhook" })
	return i >= 0 && vwh >= 0 && i > vwh
}

// validatingPluginSteps writes the built-in validating plugins that
// handled the request at where (before the policies, after the
// webhooks): one line for those that admitted it, in order, and one for
// a refusal with kube-apiserver's status. PodSecurity tells the level it
// enforced, or why the request was exempt, from its audit annotations.
func validatingPluginSteps(w io.Writer, where string, steps []admissionplugins.Step, annotations map[string]string) {
	var admitted []string
	for _, st := range steps {
		name := st.Plugin
		if name == "PodSecurity" {
			name += podSecurityDetail(annotations)
		}
		if st.Err != nil {
			if len(admitted) > 0 {
				fmt.Fprintf(w, "explain: validating admission plugins %s: %s: admitted\n", where, strings.Join(admitted, ", "))
				admitted = nil
			}
			fmt.Fprintf(w, "explain: validating admission plugin %s: refused: %v\n", name, st.Err)
			continue
		}
		admitted = append(admitted, name)
	}
	if len(admitted) > 0 {
		fmt.Fprintf(w, "explain: validating admission plugins %s: %s: admitted\n", where, strings.Join(admitted, ", "))
	}
}

// podSecurityDetail is " (enforce LEVEL:VERSION)" or " (exempt: WHY)",
// from PodSecurity's audit annotations, or "" when it published neither.
func podSecurityDetail(annotations map[string]string) string {
	if why, ok := annotations[psaapi.AuditAnnotationPrefix+psaapi.ExemptionReasonAnnotationKey]; ok {
		return " (exempt: " + why + ")"
	}
	if level, ok := annotations[psaapi.AuditAnnotationPrefix+psaapi.EnforcedPolicyAnnotationKey]; ok {
		return " (enforce " + level + ")"
	}
	return ""
}

// validation writes one ValidatingAdmissionPolicy evaluation: a line for
// the policy × binding × param with why it was skipped or its binding's
// validationActions, then one line per decision and per audit annotation
// it published.
func validation(w io.Writer, v chain.Validation) {
	who := fmt.Sprintf("policy %q", v.Configuration)
	if v.Hook != "" {
		who += fmt.Sprintf(" binding %q", v.Hook)
	}
	if v.Param != "" {
		who += " param " + v.Param
	}
	if len(v.Actions) > 0 {
		who += " (validationActions " + actions(v.Actions) + ")"
	}
	switch {
	case !v.Ran() && v.Err != nil:
		fmt.Fprintf(w, "explain: validating %s: skipped: %s: %v\n", who, v.SkipMessage(), v.Err)
	case !v.Ran():
		fmt.Fprintf(w, "explain: validating %s: skipped: %s\n", who, v.SkipMessage())
	default:
		fmt.Fprintf(w, "explain: validating %s: evaluated\n", who)
	}
	for i, d := range v.Decisions {
		elapsed := ""
		if d.Elapsed > 0 {
			elapsed = ", " + d.Elapsed.String()
		}
		switch {
		case d.Error && d.Action == chain.DecisionAdmit:
			fmt.Fprintf(w, "explain:   decision %d: error: admit (failurePolicy Ignore)%s: %s\n", i, elapsed, d.Message)
		case d.Error:
			fmt.Fprintf(w, "explain:   decision %d: error: deny (failurePolicy Fail)%s: %s\n", i, elapsed, d.Message)
		case d.Action == chain.DecisionDeny:
			fmt.Fprintf(w, "explain:   decision %d: deny (%s)%s: %s\n", i, d.Reason, elapsed, d.Message)
		default:
			fmt.Fprintf(w, "explain:   decision %d: %s%s\n", i, d.Action, elapsed)
		}
	}
	auditAnnotations(w, "explain:   audit annotation ", v.AuditAnnotations)
}

// actions is a binding's validationActions, comma separated.
func actions(as []admissionregistrationv1.ValidationAction) string {
	names := make([]string, len(as))
	for i, a := range as {
		names[i] = string(a)
	}
	return strings.Join(names, ", ")
}

// validatingWebhooks writes one "explain: validating webhook " line per
// webhook of the validating stage (chain.Call, run once), as Webhooks
// words them.
func validatingWebhooks(w io.Writer, calls []chain.Call) {
	var b strings.Builder
	Webhooks(&b, calls)
	io.WriteString(w, strings.ReplaceAll(b.String(), "explain: pass 1: webhook ", "explain: validating webhook "))
}
