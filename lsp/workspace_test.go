package lsp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"
)

func (c *client) hoverText(path string, pos protocol.Position) (string, *protocol.Range) {
	c.t.Helper()
	var hover protocol.Hover
	c.call(protocol.MethodTextDocumentHover, protocol.HoverParams{TextDocumentPositionParams: protocol.TextDocumentPositionParams{TextDocument: protocol.TextDocumentIdentifier{URI: uri.File(path)}, Position: pos}}, &hover)
	return hover.Contents.Value, hover.Range
}

func (c *client) completionList(path string, pos protocol.Position) protocol.CompletionList {
	c.t.Helper()
	var list protocol.CompletionList
	c.call(protocol.MethodTextDocumentCompletion, protocol.CompletionParams{TextDocumentPositionParams: protocol.TextDocumentPositionParams{TextDocument: protocol.TextDocumentIdentifier{URI: uri.File(path)}, Position: pos}}, &list)
	return list
}

// vapWorkspace is a ValidatingAdmissionPolicy with variables.
const vapWorkspace = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: replicas
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: ["apps"]
      apiVersions: ["v1"]
      operations: ["CREATE", "UPDATE"]
      resources: ["deployments"]
  variables:
  - name: replicas
    expression: "int(object.spec.?replicas.orValue(1))"
  - name: images
    expression: "object.spec.template.spec.containers.map(c, string(c.image))"
  validations:
  - expression: "variables.replicas <= 5 && variables.images.all(i, i.contains('/'))"
    message: too many replicas
`

// TestVAPVariables: variables. of a ValidatingAdmissionPolicy completes
// with the variables' checked types, a hover shows them, and the hover of
// a validation its type and cost.
func TestVAPVariables(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, "vap.yaml")
	if err := os.WriteFile(file, []byte(vapWorkspace), 0o644); err != nil {
		t.Fatal(err)
	}
	c := startServer(t, root)
	if ds := c.open(file, vapWorkspace); len(ds) != 0 {
		t.Errorf("diagnostics: %+v", ds)
	}
	list := c.completionList(file, at(t, vapWorkspace, "variables.replicas <=", len("variables.")))
	got := map[string]string{}
	for _, it := range list.Items {
		got[it.Label] = it.Detail
	}
	if got["replicas"] != "int" || got["images"] != "list(string)" || len(got) != 2 {
		t.Errorf("completion of variables.: %v", got)
	}
	text, rng := c.hoverText(file, at(t, vapWorkspace, "variables.images.all", len("variables.im")))
	if !strings.Contains(text, "`variables.images`: `list(string)`") || !strings.Contains(text, "expression type `bool`; static cost") {
		t.Errorf("hover of variables.images: %q", text)
	}
	if rng == nil || rangeText(vapWorkspace, *rng) != "images" {
		t.Errorf("hover range: %+v", rng)
	}
	c.shutdown()
}

// TestBuiltinDescriptions: the hover and the completion of a built-in
// kind's field carry its OpenAPI description (k8s.io/api's SwaggerDoc),
// nested and through lists and maps.
func TestBuiltinDescriptions(t *testing.T) {
	root := copyExample(t, "sidecar-injection", "default-resources")
	c := startServer(t, root)
	policy := filepath.Join(root, "sidecar-injection", "policy.yaml")
	data, _ := os.ReadFile(policy)
	text := string(data)
	c.open(policy, text)
	for _, tc := range []struct {
		marker string
		delta  int
		want   string
	}{
		{"!object.spec.containers", len("!object.spec.cont"), "`object.spec.containers`: `list(object)`\n\nList of containers belonging to the pod."},
		{"!object.spec.containers", len("!object.sp"), "`object.spec`: `object`\n\nSpecification of the desired behavior of the pod."},
		{"c.name ==", len("c.na"), ""},
	} {
		got, _ := c.hoverText(policy, at(t, text, tc.marker, tc.delta))
		if tc.want != "" && !strings.HasPrefix(got, tc.want) {
			t.Errorf("hover at %q+%d: %q, want the prefix %q", tc.marker, tc.delta, got, tc.want)
		}
	}
	list := c.completionList(policy, at(t, text, "!object.spec.containers", len("!object.spec.")))
	docs := map[string]string{}
	for _, it := range list.Items {
		if s, ok := it.Documentation.(string); ok {
			docs[it.Label] = s
		}
	}
	if !strings.HasPrefix(docs["nodeName"], "NodeName indicates in which node this pod is scheduled.") || !strings.HasPrefix(docs["containers"], "List of containers belonging to the pod.") {
		t.Errorf("completion documentation: nodeName %q, containers %q", docs["nodeName"], docs["containers"])
	}
	// Inside Object.spec.containers{…}: a Container's fields.
	list = c.completionList(policy, at(t, text, `name: "log-shipper",`, 0))
	for _, it := range list.Items {
		if it.Label == "image" {
			if s, _ := it.Documentation.(string); !strings.HasPrefix(s, "Container image name.") {
				t.Errorf("image: %q", s)
			}
		}
	}
	// Through a list's items and a map's values.
	nested := strings.Replace(text, "!object.spec.containers.exists(c, c.name == \"log-shipper\")",
		"object.spec.containers[0].securityContext.privileged == true && object.metadata.labels[\"a\"] == \"b\" && object.spec.overhead[\"cpu\"] == \"1\"", 1)
	c.change(policy, nested, 2)
	for _, tc := range []struct{ marker, want string }{
		{"securityContext.privileged", "`object.spec.containers[].securityContext.privileged`: `bool`\n\nRun container in privileged mode."},
		{"securityContext.privileged", ""},
		{"labels[", "`object.metadata.labels`: `map(string, string)`\n\nMap of string keys and values that can be used to organize and categorize (scope and select) objects."},
		{"overhead[", "`object.spec.overhead`: `map(string, dyn)`\n\nOverhead represents the resource overhead associated with running a pod for a given RuntimeClass."},
	} {
		if tc.want == "" {
			continue
		}
		delta := len(tc.marker) - 2
		if strings.HasSuffix(tc.marker, "[") {
			delta = 2
		}
		got, _ := c.hoverText(policy, at(t, nested, tc.marker, delta))
		if !strings.HasPrefix(got, tc.want) {
			t.Errorf("hover at %q: %q, want the prefix %q", tc.marker, got, tc.want)
		}
	}
	c.shutdown()
}

// TestWatchedFiles: a CRD changed on disk (workspace/didChangeWatchedFiles)
// re-diagnoses the policy open that reads its params.
func TestWatchedFiles(t *testing.T) {
	root := t.TempDir()
	crdText, policyText, _ := strings.Cut(crdWorkspace, "---\n")
	crdFile := filepath.Join(root, "crd.yaml")
	policyFile := filepath.Join(root, "policy.yaml")
	for f, s := range map[string]string{crdFile: crdText, policyFile: policyText} {
		if err := os.WriteFile(f, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := startServer(t, root)
	onImage := func(ds []protocol.Diagnostic) bool {
		for _, d := range ds {
			if rangeText(policyText, d.Range) == "image" {
				return true
			}
		}
		return false
	}
	if ds := c.open(policyFile, policyText); onImage(ds) {
		t.Fatalf("diagnostics: %+v", ds)
	}
	// The CRD renames image to imageRef on disk.
	changed := strings.Replace(crdText, "image:", "imageRef:", 1)
	if err := os.WriteFile(crdFile, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	c.drain()
	c.notify(protocol.MethodWorkspaceDidChangeWatchedFiles, protocol.DidChangeWatchedFilesParams{Changes: []*protocol.FileEvent{{URI: uri.File(crdFile), Type: protocol.FileChangeTypeChanged}}})
	ds := c.wait(policyFile)
	checkRanges(t, policyText, ds)
	if !onImage(ds) {
		t.Errorf("after the CRD changed: %+v", ds)
	}
	// Deleted: params are of an unknown kind, and the diagnostics say
	// what lint says then.
	if err := os.Remove(crdFile); err != nil {
		t.Fatal(err)
	}
	c.drain()
	c.notify(protocol.MethodWorkspaceDidChangeWatchedFiles, protocol.DidChangeWatchedFilesParams{Changes: []*protocol.FileEvent{{URI: uri.File(crdFile), Type: protocol.FileChangeTypeDeleted}}})
	ds = c.wait(policyFile)
	checkRanges(t, policyText, ds)
	if onImage(ds) {
		t.Errorf("the deleted CRD still types params: %+v", ds)
	}
	c.shutdown()
}

// copyTree copies a directory of the repository into dir/name.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if info.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestPeerSuites: kaptest, Kyverno and kat suites of the workspace load
// as `mutatis test` loads them; their errors are diagnostics at their
// fields, after a save.
func TestPeerSuites(t *testing.T) {
	root := t.TempDir()
	pt := filepath.Join("..", "policytest", "testdata")
	copyTree(t, filepath.Join(pt, "kaptest", "label-policy.test"), filepath.Join(root, "kaptest", "label-policy.test"))
	if data, err := os.ReadFile(filepath.Join(pt, "kaptest", "label-policy.yaml")); err == nil {
		_ = os.WriteFile(filepath.Join(root, "kaptest", "label-policy.yaml"), data, 0o644)
	}
	copyTree(t, filepath.Join(pt, "kyverno", "with-json-patch"), filepath.Join(root, "kyverno"))
	copyTree(t, filepath.Join(pt, "kat", "add-default-labels"), filepath.Join(root, "kat"))
	kaptest := filepath.Join(root, "kaptest", "label-policy.test", "kaptest.yaml")
	kyverno := filepath.Join(root, "kyverno", "kyverno-test.yaml")
	kat := filepath.Join(root, "kat", "tests", "add-default-labels.no-labels.object.yaml")
	c := startServer(t, root)

	for _, tc := range []struct {
		name, file, from, to, want, golden string
	}{
		{"kaptest", kaptest, "    expect: skip\n", "    expekt: skip\n", "expekt", "peer-kaptest.json"},
		{"kyverno", kyverno, "  result: pass\n", "  result: passed\n", "passed", "peer-kyverno.json"},
		{"kat", kat, "", "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := os.ReadFile(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			text := string(data)
			if ds := c.open(tc.file, text); len(ds) != 0 {
				t.Errorf("diagnostics of the suite: %+v", ds)
			}
			if tc.from == "" {
				return
			}
			bad := strings.Replace(text, tc.from, tc.to, 1)
			if bad == text {
				t.Fatalf("no %q in %s", tc.from, tc.file)
			}
			if err := os.WriteFile(tc.file, []byte(bad), 0o644); err != nil {
				t.Fatal(err)
			}
			c.change(tc.file, bad, 2)
			c.drain()
			c.notify(protocol.MethodTextDocumentDidSave, protocol.DidSaveTextDocumentParams{TextDocument: protocol.TextDocumentIdentifier{URI: uri.File(tc.file)}})
			ds := c.wait(tc.file)
			checkRanges(t, bad, ds)
			if len(ds) == 0 || rangeText(bad, ds[0].Range) != tc.want {
				t.Fatalf("diagnostics: %+v", ds)
			}
			golden(t, tc.golden, ds)
		})
	}
	// Definitions from a suite: a case's policy name, a policy file.
	ktext, _ := os.ReadFile(kaptest)
	ks := strings.Replace(string(ktext), "expekt", "expect", 1)
	c.change(kaptest, ks, 3)
	policyFile := filepath.Join(root, "kaptest", "label-policy.yaml")
	ptext, _ := os.ReadFile(policyFile)
	locs := c.locations(protocol.MethodTextDocumentDefinition, kaptest, at(t, ks, "policy: label-policy", len("policy: la")))
	if len(locs) != 1 || locs[0].URI.Filename() != policyFile || rangeText(string(ptext), locs[0].Range) != "label-policy" {
		t.Errorf("definition of a case's policy: %+v", locs)
	}
	locs = c.locations(protocol.MethodTextDocumentDefinition, kaptest, at(t, ks, "../label-policy.yaml", 4))
	if len(locs) != 1 || locs[0].URI.Filename() != policyFile {
		t.Errorf("definition of a policy file: %+v", locs)
	}

	// A kat request with a misspelt field, created on disk: on its key.
	req := filepath.Join(root, "kat", "tests", "add-default-labels.no-labels.request.yaml")
	reqText := "operation: CREATE\nnamespaec: default\n"
	if err := os.WriteFile(req, []byte(reqText), 0o644); err != nil {
		t.Fatal(err)
	}
	c.drain()
	c.notify(protocol.MethodWorkspaceDidChangeWatchedFiles, protocol.DidChangeWatchedFilesParams{Changes: []*protocol.FileEvent{{URI: uri.File(req), Type: protocol.FileChangeTypeCreated}}})
	ds := c.wait(kat)
	if len(ds) != 0 {
		t.Errorf("kat object: %+v", ds)
	}
	ds = c.open(req, reqText)
	checkRanges(t, reqText, ds)
	if len(ds) != 1 || ds[0].Code != "kat-suite" || rangeText(reqText, ds[0].Range) != "namespaec" {
		t.Errorf("kat request: %+v", ds)
	}
	golden(t, "peer-kat.json", ds)
	c.shutdown()
}
