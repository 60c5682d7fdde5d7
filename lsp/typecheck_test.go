package lsp

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mutatis-dev/mutatis/compiler"
)

// TestCompletionHeldToTypeChecker: every field completion offers after
// object.spec. (a Deployment) and object.spec.template.spec. is one
// lint's schema-typed compilation (kube-apiserver's type checker's
// declarations) accepts: a policy reading each one with has() gets no
// read-undeclared-field or read-type finding.
func TestCompletionHeldToTypeChecker(t *testing.T) {
	const head = `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata:
  name: reads
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: ["apps"]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["deployments"]
  reinvocationPolicy: Never
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: "Object{}"
  variables:
  - name: probe
    expression: "object.spec."
`
	comp, err := compiler.New()
	if err != nil {
		t.Fatal(err)
	}
	path := "/ws/reads.yaml"
	a := analyze(comp, map[string]*fileState{path: newFileState(path, []byte(head))}, nil)
	var reads []string
	for _, prefix := range []string{"object.spec.", "object.spec.template.spec."} {
		doc := strings.Replace(head, `"object.spec."`, `"`+prefix+`"`, 1)
		a = analyze(comp, map[string]*fileState{path: newFileState(path, []byte(doc))}, nil)
		off := strings.Index(doc, `"`+prefix+`"`) + 1 + len(prefix)
		items := a.complete(path, off)
		n := 0
		for _, it := range items {
			if it.Kind == 5 { // Field
				reads = append(reads, prefix+it.Label)
				n++
			}
		}
		if n < 5 {
			t.Fatalf("completion of %s: %v", prefix, labelsOf(items))
		}
	}
	var b strings.Builder
	b.WriteString(strings.Replace(head, "  variables:\n  - name: probe\n    expression: \"object.spec.\"\n", "  variables:\n", 1))
	for i, r := range reads {
		fmt.Fprintf(&b, "  - name: v%d\n    expression: \"has(%s)\"\n", i, r)
	}
	// The control: a field no schema declares is found.
	fmt.Fprintf(&b, "  - name: control\n    expression: \"has(object.spec.template.spec.bogus)\"\n")
	doc := b.String()
	a = analyze(comp, map[string]*fileState{path: newFileState(path, []byte(doc))}, nil)
	for _, d := range a.Diagnostics[path] {
		if rangeText(doc, d.Range) == "bogus" && d.Code == "read-undeclared-field" {
			continue
		}
		t.Errorf("%s: %v %s", rangeText(doc, d.Range), d.Code, d.Message)
	}
	if len(a.Diagnostics[path]) != 1 {
		t.Errorf("the control has no finding: %+v", a.Diagnostics[path])
	}
	if t.Failed() {
		t.Logf("reads: %v", reads)
	}
}
