package lsp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"
)

func (c *client) complete(path string, pos protocol.Position) []string {
	c.t.Helper()
	var list protocol.CompletionList
	c.call(protocol.MethodTextDocumentCompletion, protocol.CompletionParams{TextDocumentPositionParams: protocol.TextDocumentPositionParams{TextDocument: protocol.TextDocumentIdentifier{URI: uri.File(path)}, Position: pos}}, &list)
	return labelsOf(list.Items)
}

func (c *client) locations(method, path string, pos protocol.Position) []protocol.Location {
	c.t.Helper()
	var locs []protocol.Location
	tdp := protocol.TextDocumentPositionParams{TextDocument: protocol.TextDocumentIdentifier{URI: uri.File(path)}, Position: pos}
	if method == protocol.MethodTextDocumentReferences {
		c.call(method, protocol.ReferenceParams{TextDocumentPositionParams: tdp, Context: protocol.ReferenceContext{IncludeDeclaration: true}}, &locs)
	} else {
		c.call(method, protocol.DefinitionParams{TextDocumentPositionParams: tdp}, &locs)
	}
	return locs
}

// TestVariablesParamsAndSuites: the default-resources example, whose
// policy has a variable and a ConfigMap paramKind, and its suite.
func TestVariablesParamsAndSuites(t *testing.T) {
	root := copyExample(t, "default-resources")
	c := startServer(t, root)
	policy := filepath.Join(root, "default-resources", "policy.yaml")
	data, _ := os.ReadFile(policy)
	text := string(data)
	if ds := c.open(policy, text); len(ds) != 0 {
		t.Errorf("diagnostics of the example: %+v", ds)
	}
	if got := c.complete(policy, at(t, text, "variables.missing.map", len("variables."))); !contains(got, "missing") {
		t.Errorf("completion of variables.: %v", got)
	}
	if got := c.complete(policy, at(t, text, "params.data[?\"cpu\"]", len("params."))); !contains(got, "data") || !contains(got, "binaryData") {
		t.Errorf("completion of params. (a ConfigMap): %v", got)
	}
	if got := c.complete(policy, at(t, text, "object.spec.template.spec.containers.filter", len("object.spec.template.spec.containers."))); !contains(got, "filter") || !contains(got, "exists") {
		t.Errorf("member functions after a list: %v", got)
	}
	if got := c.complete(policy, at(t, text, "object.spec.template.spec.containers.filter", len("object.spec.template."))); !contains(got, "spec") || !contains(got, "metadata") {
		t.Errorf("completion of object.spec.template.: %v", got)
	}
	// Definition of variables.missing: the variable's name.
	locs := c.locations(protocol.MethodTextDocumentDefinition, policy, at(t, text, "variables.missing.map", len("variables.mi")))
	if len(locs) != 1 || rangeText(text, locs[0].Range) != "missing" || locs[0].Range.Start != at(t, text, "name: missing", len("name: ")) {
		t.Errorf("definition of variables.missing: %+v", locs)
	}
	// References of the variable: its name and its use.
	locs = c.locations(protocol.MethodTextDocumentReferences, policy, at(t, text, "name: missing", len("name: m")))
	if len(locs) != 1 || rangeText(text, locs[0].Range) != "variables.missing" {
		t.Errorf("references of missing: %+v", locs)
	}
	// Hover on the variable: its type.
	var hover protocol.Hover
	c.call(protocol.MethodTextDocumentHover, protocol.HoverParams{TextDocumentPositionParams: protocol.TextDocumentPositionParams{TextDocument: protocol.TextDocumentIdentifier{URI: uri.File(policy)}, Position: at(t, text, "variables.missing.map", len("variables.mi"))}}, &hover)
	if !strings.Contains(hover.Contents.Value, "`variables.missing`: `list(") {
		t.Errorf("hover of variables.missing: %q", hover.Contents.Value)
	}

	// The suite: a code lens, run through policytest.
	suite := filepath.Join(root, "default-resources", "default-resources.mutatis-test.yaml")
	sdata, _ := os.ReadFile(suite)
	if ds := c.open(suite, string(sdata)); len(ds) != 0 {
		t.Errorf("diagnostics of the suite: %+v", ds)
	}
	var lenses []protocol.CodeLens
	c.call(protocol.MethodTextDocumentCodeLens, protocol.CodeLensParams{TextDocument: protocol.TextDocumentIdentifier{URI: uri.File(suite)}}, &lenses)
	if len(lenses) != 1 || lenses[0].Command.Command != CommandRunSuite {
		t.Fatalf("code lenses: %+v", lenses)
	}
	var summary string
	c.call(protocol.MethodWorkspaceExecuteCommand, protocol.ExecuteCommandParams{Command: lenses[0].Command.Command, Arguments: lenses[0].Command.Arguments}, &summary)
	if !strings.Contains(summary, "passed, 0 failed, 0 errors, 0 bad suites") || strings.Contains(summary, ": 0 passed") {
		t.Errorf("run: %q", summary)
	}
	// A suite error lands on its field.
	bad := strings.Replace(string(sdata), "  expect:\n", "  expekt:\n", 1)
	ds := c.change(suite, bad, 2)
	checkRanges(t, bad, ds)
	if len(ds) == 0 || rangeText(bad, ds[0].Range) != "expekt" {
		t.Errorf("suite diagnostics: %+v", ds)
	}
	c.shutdown()
}

// crdWorkspace is a CRD with descriptions and a policy whose params are
// of its kind.
const crdWorkspace = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: sidecarconfigs.example.com
spec:
  group: example.com
  names: {kind: SidecarConfig, plural: sidecarconfigs, singular: sidecarconfig, listKind: SidecarConfigList}
  scope: Cluster
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              image:
                type: string
                description: The image of the sidecar.
              replicas:
                type: integer
                description: How many.
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata:
  name: sidecar
spec:
  paramKind: {apiVersion: example.com/v1, kind: SidecarConfig}
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["pods"]
  reinvocationPolicy: Never
  mutations:
  - patchType: JSONPatch
    jsonPatch:
      expression: "[JSONPatch{op: \"add\", path: \"/metadata/labels/x\", value: params.spec.image}]"
`

func TestCRDParams(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, "w.yaml")
	if err := os.WriteFile(file, []byte(crdWorkspace), 0o644); err != nil {
		t.Fatal(err)
	}
	c := startServer(t, root)
	ds := c.open(file, crdWorkspace)
	checkRanges(t, crdWorkspace, ds)
	if got := c.complete(file, at(t, crdWorkspace, "params.spec.image", len("params.spec."))); !contains(got, "image") || !contains(got, "replicas") {
		t.Errorf("completion of params.spec.: %v", got)
	}
	var hover protocol.Hover
	c.call(protocol.MethodTextDocumentHover, protocol.HoverParams{TextDocumentPositionParams: protocol.TextDocumentPositionParams{TextDocument: protocol.TextDocumentIdentifier{URI: uri.File(file)}, Position: at(t, crdWorkspace, "params.spec.image", len("params.spec.im"))}}, &hover)
	if !strings.Contains(hover.Contents.Value, "`params.spec.image`: `string`\n\nThe image of the sidecar.") {
		t.Errorf("hover: %q", hover.Contents.Value)
	}
	locs := c.locations(protocol.MethodTextDocumentDefinition, file, at(t, crdWorkspace, "kind: SidecarConfig}", len("kind: Sid")))
	if len(locs) != 1 || rangeText(crdWorkspace, locs[0].Range) != "SidecarConfig" || locs[0].Range.Start.Line != 6 {
		t.Errorf("definition of the paramKind: %+v", locs)
	}
	// A CEL error in a double-quoted string: on the name, past the
	// escaped quotes.
	broken := strings.Replace(crdWorkspace, "params.spec.image}", "params.spec.imag}", 1)
	ds = c.change(file, broken, 2)
	checkRanges(t, broken, ds)
	if len(ds) == 0 || rangeText(broken, ds[0].Range) != "imag" {
		t.Errorf("diagnostics: %+v", ds)
	}
	c.shutdown()
}

// TestBadInput: malformed, huge and odd documents get diagnostics, never
// a crash, and the session goes on.
func TestBadInput(t *testing.T) {
	root := t.TempDir()
	c := startServer(t, root)
	file := filepath.Join(root, "bad.yaml")
	for i, text := range []string{
		"apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingAdmissionPolicy\nmetadata: {name: x\n",
		"\x00\xff\xfe: [",
		"kind: MutatingAdmissionPolicy\napiVersion: admissionregistration.k8s.io/v1\nspec: 3\n",
		strings.Repeat("[", 5000),
		"apiVersion: v1\nkind: List\nitems:\n- apiVersion: admissionregistration.k8s.io/v1\n  kind: MutatingAdmissionPolicy\n  metadata: {name: y}\n  spec: {}\n",
		"a: " + strings.Repeat("x", maxFileSize) + "\n",
		"",
	} {
		var ds []protocol.Diagnostic
		if i == 0 {
			ds = c.open(file, text)
		} else {
			ds = c.change(file, text, int32(i))
		}
		checkRanges(t, text, ds)
		if text != "" && len(ds) == 0 {
			t.Errorf("document %d: no diagnostics", i)
		}
		for _, pos := range []protocol.Position{{}, {Line: 1, Character: 3}, {Line: 1000, Character: 1000}} {
			c.complete(file, pos)
			var hover protocol.Hover
			c.call(protocol.MethodTextDocumentHover, protocol.HoverParams{TextDocumentPositionParams: protocol.TextDocumentPositionParams{TextDocument: protocol.TextDocumentIdentifier{URI: uri.File(file)}, Position: pos}}, &hover)
		}
	}
	c.shutdown()
}
