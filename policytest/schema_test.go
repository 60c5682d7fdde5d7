package policytest

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"sigs.k8s.io/yaml"
)

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open("../docs/schema/policytest.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("policytest.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("policytest.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func yamlDoc(t *testing.T, data []byte) any {
	t.Helper()
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(string(js)))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestSchemaValidatesEverySuite checks docs/schema/policytest.schema.json
// against every suite of the repository that ParseSuite accepts.
func TestSchemaValidatesEverySuite(t *testing.T) {
	s := compileSchema(t)
	files, err := Discover([]string{"../examples", "testdata"})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !IsSuiteFile(f) {
			continue // kat's or Kyverno's format, not a PolicyTest
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		_, parseErr := ParseSuite(f, data)
		err = s.Validate(yamlDoc(t, data))
		if (parseErr == nil) != (err == nil) {
			t.Errorf("%s: ParseSuite says %v, the schema says %v", f, parseErr, err)
		}
	}
}

func TestSchemaRejectsWhatParseSuiteRejects(t *testing.T) {
	s := compileSchema(t)
	const head = "apiVersion: mutatis.dev/v1alpha1\nkind: PolicyTest\npolicies: [p.yaml]\n"
	for _, bad := range []string{
		head + "cases:\n- name: a\n  object: {apiVersion: v1, kind: Pod}\n  expect: {unchangd: true}\n",
		head + "cases:\n- name: a\n",
		head + "cases:\n- name: a\n  object: p.yaml\n  objectRef: {kind: Pod, name: p}\n",
		head + "cases:\n- name: a\n  operation: PATCH\n  object: p.yaml\n",
		head + "cases:\n- name: a\n  object: p.yaml\n  expect: {denied: false}\n",
		head + "cases:\n- name: a\n  object: p.yaml\n  expect: {maxRuntimeCost: {\"p[x]\": 1}}\n",
		head + "cases:\n- name: a\n  object: p.yaml\n  expect: {denied: {messageRegex: \"(\"}}\n",
		"apiVersion: mutatis.dev/v1\nkind: PolicyTest\npolicies: [p.yaml]\ncases:\n- name: a\n  object: p.yaml\n",
		head + "bindings: manual\ncases:\n- name: a\n  object: p.yaml\n",
		"apiVersion: mutatis.dev/v1alpha1\nkind: PolicyTest\npolicies: []\ncases:\n- name: a\n  object: p.yaml\n",
		head + "cases:\n- name: a\n  object: p.yaml\n  idempotence: no thanks\n",
	} {
		if _, err := ParseSuite("s.mutatis-test.yaml", []byte(bad)); err == nil {
			t.Errorf("ParseSuite accepts:\n%s", bad)
		}
		if err := s.Validate(yamlDoc(t, []byte(bad))); err == nil {
			t.Errorf("the schema accepts:\n%s", bad)
		}
	}
	// And a suite using every field validates.
	good := head + `metadata: {name: all}
resources: [r.yaml, {apiVersion: v1, kind: Namespace, metadata: {name: a}}]
bindings: auto
skipIdempotence: [p]
defaults: {operation: CREATE, namespace: a, user: {name: u, uid: "1", groups: [g], extra: {k: [v]}}, idempotence: true}
cases:
- name: every field
  operation: UPDATE
  subresource: status
  namespace: a
  user: {name: u}
  dryRun: true
  objectRef: {apiVersion: v1, kind: Pod, name: p, namespace: a}
  oldObject: {apiVersion: v1, kind: Pod, metadata: {name: p}}
  resources: [more.yaml]
  idempotence: false
  expect:
    object: final.yaml
    objectContains: {spec: {}}
    patch: [{op: add, path: /a, value: 1}]
    unchanged: true
    applied: [p, p/b]
    notApplied: [q]
    maxRuntimeCost: {p: 10, "p[0]": 5}
- name: denial
  object: p.yaml
  expect: {denied: {message: m, messageRegex: "^m", code: 403, by: ValidatingAdmissionPolicy}, warnings: [w], auditAnnotations: {p/k: v}, validationFailures: [{policy: p, expressionIndex: 0}]}
- name: a delete
  operation: DELETE
  oldObject: p.yaml
  expect: {applied: [webhook:c/w]}
`
	if _, err := ParseSuite("s.mutatis-test.yaml", []byte(good)); err != nil {
		t.Errorf("ParseSuite: %v", err)
	}
	if err := s.Validate(yamlDoc(t, []byte(good))); err != nil {
		b, _ := json.MarshalIndent(err, "", " ")
		t.Errorf("the schema rejects the full suite: %v\n%s", err, b)
	}
}
