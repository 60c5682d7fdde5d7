package lsp

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.lsp.dev/protocol"
)

// authzLevels are the levels of an authorizer chain a completion is asked
// at, the probe's text up to the cursor.
var authzLevels = []string{
	"authorizer.",
	"authorizer.requestResource.",
	"authorizer.group('apps').",
	"authorizer.group('apps').resource('deployments').",
	"authorizer.group('apps').resource('deployments').namespace('x').",
	"authorizer.group('apps').resource('deployments').na",
	"authorizer.group('apps').resource('deployments').check('get').",
	"authorizer.path('/healthz').",
	"authorizer.path('/healthz').check('get').",
	"authorizer.serviceAccount('default', 'builder').",
	"authorizer.serviceAccount('default', 'builder').group('').resource('pods').",
}

// authzMatch are the policies' matchConstraints: Deployments.
const authzMatch = `  matchConstraints:
    resourceRules:
    - apiGroups: ["apps"]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["deployments"]
`

// authzPolicies are a MutatingAdmissionPolicy and a
// ValidatingAdmissionPolicy whose variable probe is the expression
// completed (PROBE).
var authzPolicies = map[string]string{
	"MutatingAdmissionPolicy": `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata:
  name: authz
spec:
` + authzMatch + `  reinvocationPolicy: Never
  variables:
  - name: probe
    expression: "PROBE"
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: "Object{}"
`,
	"ValidatingAdmissionPolicy": `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: authz
spec:
  failurePolicy: Fail
` + authzMatch + `  variables:
  - name: probe
    expression: "PROBE"
  validations:
  - expression: "true"
`,
}

// TestAuthorizerChainCompletion asks the server for the completions at
// each level of an authorizer chain in a MutatingAdmissionPolicy and a
// ValidatingAdmissionPolicy (golden answers), then holds every member
// offered to kube-apiserver's type checker: the chain with the member
// called on it compiles without a diagnostic (a member the environment
// lacks is found: the control).
func TestAuthorizerChainCompletion(t *testing.T) {
	for _, kind := range []string{"MutatingAdmissionPolicy", "ValidatingAdmissionPolicy"} {
		t.Run(kind, func(t *testing.T) {
			root := t.TempDir()
			path := filepath.Join(root, "authz.yaml")
			head := authzPolicies[kind]
			if err := os.WriteFile(path, []byte(strings.Replace(head, "PROBE", "true", 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			c := startServer(t, root)
			defer c.shutdown()
			got := map[string][]protocol.CompletionItem{}
			var calls []string
			for v, level := range authzLevels {
				doc := strings.Replace(head, "PROBE", level, 1)
				if v == 0 {
					c.open(path, doc)
				} else {
					c.change(path, doc, int32(v+1))
				}
				items := c.completionList(path, at(t, doc, level+`"`, len([]rune(level)))).Items
				if len(items) == 0 {
					t.Errorf("%s: no completion", level)
				}
				got[level] = items
				recv := level[:strings.LastIndex(level, ".")]
				for _, it := range items {
					calls = append(calls, recv+"."+callOf(it))
				}
			}
			golden(t, "authz-"+kind+".json", got)

			// Every member, called, compiles; the control does not.
			calls = append(calls, "authorizer.group('apps').bogus('x')")
			var b strings.Builder
			for i, call := range calls {
				fmt.Fprintf(&b, "  - name: c%d\n    expression: %q\n", i, call)
			}
			doc := strings.Replace(head, "  - name: probe\n    expression: \"PROBE\"\n", b.String(), 1)
			ds := c.change(path, doc, int32(len(authzLevels)+1))
			for _, d := range ds {
				if strings.Contains(d.Message, "bogus") {
					continue
				}
				t.Errorf("%s: %s", rangeText(doc, d.Range), d.Message)
			}
			if len(ds) != 1 {
				t.Errorf("the control has no diagnostic: %+v", ds)
			}
		})
	}
}

// callOf is a completion item as the chain's next step: a member function
// called with an argument of each parameter (its detail's signature), a
// variable as it is.
func callOf(it protocol.CompletionItem) string {
	if it.Kind != protocol.CompletionItemKindMethod {
		return it.Label
	}
	_, params, _ := strings.Cut(it.Detail, "(")
	params, _, _ = strings.Cut(params, ")")
	var args []string
	for _, p := range strings.Split(params, ",") {
		if strings.TrimSpace(p) != "" {
			args = append(args, "'x'")
		}
	}
	return it.Label + "(" + strings.Join(args, ", ") + ")"
}
