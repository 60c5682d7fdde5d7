// Package explain renders evaluation results for people: the trace of a
// chain.Result — which policy bindings ran in which pass
// (chain.Invocation), the admission plugins before them
// (admissionplugins.Step), the webhooks after them (chain.Call), the chain's
// reinvocation round, its audit annotations — the validating stage after
// the registry's validation (ValidatingStage: the validating plugins,
// ValidatingAdmissionPolicies and webhooks, the refusal, the audit
// annotations), the warnings of a request as kube-apiserver returns them
// (Returned), and unified diffs of YAML, colored on terminals.
// `mutatis apply --explain` and `mutatis test` print the same text with it.
package explain

import (
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/yaml"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/scheme/admissionplugins"
)

// Trace writes the evaluation trace of r, one "explain: " line per
// invocation and mutation.
func Trace(w io.Writer, r chain.Result) {
	if len(r.Invocations) == 0 {
		fmt.Fprintln(w, "explain: no policy binding matched the request")
	}
	invocations(w, r.Invocations)
	traceEnd(w, r)
}

// Chain writes the trace of r, a request through kube-apiserver's whole
// mutating chain after its first round of admission plugins (which
// Plugins writes), pass by pass: the policies' invocations, the
// webhooks' calls, then, when the chain was reinvoked, the admission
// plugins' steps of the second pass and the second pass of the policies
// and webhooks; last, the chain's audit annotations (the webhooks'), by
// key.
func Chain(w io.Writer, r chain.Result) {
	calls, reinvoked, reinvokedPlugins := r.Calls, r.Reinvoked, r.PluginSteps
	if len(r.Invocations) == 0 {
		fmt.Fprintln(w, "explain: no policy binding matched the request")
	}
	for pass := 1; pass <= 2; pass++ {
		if pass == 2 {
			Reinvocation(w, reinvoked, reinvokedPlugins)
		}
		var invs []chain.Invocation
		for _, inv := range r.Invocations {
			if inv.Round+1 == pass {
				invs = append(invs, inv)
			}
		}
		invocations(w, invs)
		var cs []chain.Call
		for _, c := range calls {
			if c.Round+1 == pass {
				cs = append(cs, c)
			}
		}
		Webhooks(w, cs)
	}
	traceEnd(w, r)
	auditAnnotations(w, "explain: audit annotation ", r.AuditAnnotations)
}

// auditAnnotations writes one line per audit annotation, prefix then
// "KEY: VALUE", by key.
func auditAnnotations(w io.Writer, prefix string, annotations map[string]string) {
	for _, k := range slices.Sorted(maps.Keys(annotations)) {
		fmt.Fprintf(w, "%s%s: %s\n", prefix, k, annotations[k])
	}
}

// invocations writes one line per invocation and mutation.
func invocations(w io.Writer, invs []chain.Invocation) {
	for _, inv := range invs {
		param := ""
		if inv.Param != "" {
			param = " param " + inv.Param
		}
		who := fmt.Sprintf("policy %q", inv.Configuration)
		if inv.Hook != "" {
			who += fmt.Sprintf(" binding %q", inv.Hook)
		}
		fmt.Fprintf(w, "explain: pass %d: %s%s", inv.Round+1, who, param)
		switch {
		case inv.Skip == chain.SkipMatchConditionsErrorIgnored:
			fmt.Fprintf(w, ": skipped: %s: %v\n", inv.SkipMessage(), inv.Err)
		case inv.Err != nil:
			fmt.Fprintf(w, ": error: %v\n", inv.Err)
		case !inv.Ran():
			fmt.Fprintf(w, ": skipped: %s\n", inv.SkipMessage())
		default:
			fmt.Fprintln(w, ": applied")
		}
		for i, m := range inv.Mutations {
			note := ""
			if m.Skipped {
				note = " (a JSON patch test failed: patch dropped)"
			}
			if m.Err != nil {
				note += fmt.Sprintf(": error: %v", m.Err)
			}
			fmt.Fprintf(w, "explain:   mutation %d: runtime cost %d, %s%s\n", i, m.Cost, m.Elapsed, note)
		}
	}
}

// traceEnd writes the errors failurePolicy Ignore dropped and whether a
// policy asked for the chain's reinvocation in the last pass.
func traceEnd(w io.Writer, r chain.Result) {
	for _, ig := range r.Ignored {
		fmt.Fprintf(w, "explain: pass %d: ignored (failurePolicy Ignore): %s\n", ig.Round+1, ig.Message)
	}
	if r.Reinvoke {
		fmt.Fprintln(w, "explain: the admission chain would be reinvoked")
	}
}

// IgnoredWarnings are the warnings that tell a person about the errors
// failurePolicy Ignore dropped (Result.Ignored), one line each:
// "policy P binding B mutation N: error ignored by failurePolicy Ignore: MSG".
func IgnoredWarnings(r chain.Result) []string {
	var out []string
	for _, ig := range r.Ignored {
		who := fmt.Sprintf("policy %q", ig.Configuration)
		if ig.Hook != "" {
			who += fmt.Sprintf(" binding %q", ig.Hook)
		}
		if ig.Mutation >= 0 {
			who += fmt.Sprintf(" mutation %d", ig.Mutation)
		}
		if ig.Round == 1 {
			who += " (reinvocation)"
		}
		out = append(out, fmt.Sprintf("%s: error ignored by failurePolicy Ignore: %v", who, ig.Err))
	}
	return out
}

// Plugins writes the stage of kube-apiserver's admission plugins before
// the policies: the plugins run (in order) and, of the steps, the
// plugins that changed the object and a refusal.
func Plugins(w io.Writer, run []string, steps []admissionplugins.Step) {
	if len(run) == 0 {
		fmt.Fprintln(w, "explain: admission plugins: none run before the policies")
		return
	}
	fmt.Fprintf(w, "explain: admission plugins before the policies: %s\n", strings.Join(run, ", "))
	if !PluginSteps(w, steps) {
		fmt.Fprintln(w, "explain: admission plugins: none changed the object")
	}
}

// PluginSteps writes the steps of the admission plugins that changed the
// object or refused the request, one "explain: " line each, and tells
// whether there was one.
func PluginSteps(w io.Writer, steps []admissionplugins.Step) bool {
	wrote := false
	for _, st := range steps {
		switch {
		case st.Err != nil:
			fmt.Fprintf(w, "explain: admission plugin %s: refused: %v\n", st.Plugin, st.Err)
		case st.Changed:
			fmt.Fprintf(w, "explain: admission plugin %s: changed the object\n", st.Plugin)
		default:
			continue
		}
		wrote = true
	}
	return wrote
}

// Webhooks writes one "explain: " line per webhook of each pass of the
// chain (chain.Call), in order: matched or why not, the
// AdmissionReview version, the latency, whether it is reinvocable, the
// outcome under its failure policy and its patch.
func Webhooks(w io.Writer, calls []chain.Call) {
	for _, c := range calls {
		fmt.Fprintf(w, "explain: pass %d: webhook %q of %q", c.Round+1, c.Hook, c.Configuration)
		if c.Outcome == chain.NotCalled {
			fmt.Fprintf(w, ": skipped: %s\n", c.SkipMessage())
			continue
		}
		var notes []string
		if c.Version != "" {
			notes = append(notes, "AdmissionReview "+c.Version)
		}
		if c.Latency > 0 {
			notes = append(notes, c.Latency.String())
		}
		if c.Reinvocable {
			notes = append(notes, "reinvocationPolicy IfNeeded")
		}
		detail := ""
		if len(notes) > 0 {
			detail = " (" + strings.Join(notes, ", ") + ")"
		}
		switch c.Outcome {
		case chain.FailedOpen:
			fmt.Fprintf(w, ": called%s: failed open (failurePolicy Ignore): %v\n", detail, c.Err)
		case chain.FailedClosed:
			fmt.Fprintf(w, ": called%s: failed closed (failurePolicy Fail): %v\n", detail, c.Err)
		case chain.Denied, chain.Refused:
			fmt.Fprintf(w, ": called%s: %s: %v\n", detail, c.Outcome, c.Err)
		default:
			change := "no patch"
			switch {
			case len(c.Patch) > 0 && c.Changed:
				change = "patch changed the object: " + string(c.Patch)
			case len(c.Patch) > 0:
				change = "patch changed nothing: " + string(c.Patch)
			}
			fmt.Fprintf(w, ": called%s: %s, %s\n", detail, c.Outcome, change)
		}
	}
}

// Reinvocation writes the chain's reinvocation round: that it ran (any
// change by a policy or a webhook asks for it) and what the built-in
// plugins did in it; nothing when it did not run.
func Reinvocation(w io.Writer, ran bool, steps []admissionplugins.Step) {
	if !ran {
		return
	}
	fmt.Fprintln(w, "explain: pass 2: the admission chain is reinvoked (a policy or a webhook changed the object): the admission plugins, then the policies and webhooks to reinvoke")
	var b strings.Builder
	if PluginSteps(&b, steps) {
		io.WriteString(w, strings.ReplaceAll(b.String(), "explain: admission plugin", "explain: pass 2: admission plugin"))
	}
}

// Validation writes the validation stage of an admission: the API
// validation of the admitted object that kube-apiserver's registry runs
// after mutating admission. invalid is its refusal, or nil.
func Validation(w io.Writer, invalid *apierrors.StatusError, warnings []string) {
	switch {
	case invalid != nil:
		fmt.Fprintf(w, "explain: validation: refused (%d %s): %s\n", invalid.ErrStatus.Code, invalid.ErrStatus.Reason, invalid.ErrStatus.Message)
	default:
		fmt.Fprintln(w, "explain: validation: the admitted object is valid")
	}
	for _, text := range warnings {
		fmt.Fprintf(w, "explain: validation: warning: %s\n", text)
	}
}

// ValidationNotRun writes the validation stage of a request the mutating
// chain refused: kube-apiserver's registry never validates it.
func ValidationNotRun(w io.Writer) {
	fmt.Fprintln(w, "explain: validation: not run (the request was refused before it)")
}

// TraceString returns the trace of r as Trace writes it.
func TraceString(r chain.Result) string {
	var b strings.Builder
	Trace(&b, r)
	return b.String()
}

// Diff returns the unified diff (3 lines of context) of the YAML forms of a
// and b, labelled from and to; "" when they are equal.
func Diff(from, to string, a, b any) (string, error) {
	ya, err := yaml.Marshal(a)
	if err != nil {
		return "", err
	}
	yb, err := yaml.Marshal(b)
	if err != nil {
		return "", err
	}
	return difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(string(ya)), B: difflib.SplitLines(string(yb)),
		FromFile: from, ToFile: to, Context: 3,
	})
}

// IsTerminal tells whether w is a character device (a terminal).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// Colorize colors the added lines of a unified diff green and the removed
// ones red with ANSI escapes. Header lines (---, +++) are left alone.
func Colorize(diff string) string {
	lines := strings.SplitAfter(diff, "\n")
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "+") && !strings.HasPrefix(l, "+++"):
			lines[i] = "\x1b[32m" + strings.TrimSuffix(l, "\n") + "\x1b[0m" + newline(l)
		case strings.HasPrefix(l, "-") && !strings.HasPrefix(l, "---"):
			lines[i] = "\x1b[31m" + strings.TrimSuffix(l, "\n") + "\x1b[0m" + newline(l)
		}
	}
	return strings.Join(lines, "")
}

func newline(l string) string {
	if strings.HasSuffix(l, "\n") {
		return "\n"
	}
	return ""
}
