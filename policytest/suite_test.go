package policytest

import (
	"strings"
	"testing"
)

func TestParseSuiteReportsFileAndFieldPath(t *testing.T) {
	const head = "apiVersion: mutatis.dev/v1alpha1\nkind: PolicyTest\npolicies: [p.yaml]\n"
	const pod = "  object: {apiVersion: v1, kind: Pod, metadata: {name: p}}\n"
	cases := []struct {
		name string
		yaml string
		want []string
	}{
		{"a wrong kind", "apiVersion: mutatis.dev/v1alpha1\nkind: Test\npolicies: [p.yaml]\ncases:\n- name: a\n" + pod,
			[]string{`s.mutatis-test.yaml: kind: Unsupported value: "Test"`}},
		{"an unknown field names its path", head + "cases:\n- name: a\n" + pod + "  expect:\n    unchangd: true\n",
			[]string{`s.mutatis-test.yaml: cases[0].expect.unchangd: unknown field; did you mean "unchanged"?`}},
		{"an unknown top-level field suggests the closest", head + "casess: []\ncases:\n- name: a\n" + pod,
			[]string{`s.mutatis-test.yaml: casess: unknown field; did you mean "cases"?`}},
		{"a field in the wrong case", head + "cases:\n- name: a\n  Operation: CREATE\n" + pod,
			[]string{`s.mutatis-test.yaml: cases[0].Operation: unknown field; did you mean "operation"?`}},
		{"nothing close, no suggestion", head + "cases:\n- name: a\n" + pod + "  expect:\n    zzzzzz: 1\n",
			[]string{"s.mutatis-test.yaml: cases[0].expect.zzzzzz: unknown field\n"}},
		{"an unknown field of a denial", head + "cases:\n- name: a\n" + pod + "  expect:\n    denied: {mesage: x}\n",
			[]string{`s.mutatis-test.yaml: cases[0].expect.denied.mesage: unknown field; did you mean "message"?`}},
		{"a field of the wrong type", head + "cases:\n- name: a\n" + pod + "  expect:\n    unchanged: yes please\n",
			[]string{`s.mutatis-test.yaml: cases[0].expect.unchanged: cannot be a string`}},
		{"a field of the wrong type in a later case", head + "cases:\n- name: a\n" + pod + "- name: b\n" + pod + "  expect:\n    applied: x\n",
			[]string{`s.mutatis-test.yaml: cases[1].expect.applied: cannot be a string (want []string)`}},
		{"no cases", head, []string{`s.mutatis-test.yaml: cases: Required value`}},
		{"a case without a name or object", head + "cases:\n- operation: CREATE\n",
			[]string{`cases[0].name: Required value`, `cases[0].object: Required value: object or objectRef`}},
		{"duplicate case names", head + "cases:\n- name: a\n" + pod + "- name: a\n" + pod,
			[]string{`cases[1].name: Duplicate value: "a (cases[0])"`}},
		{"an UPDATE without an old object", head + "cases:\n- name: a\n  operation: UPDATE\n" + pod,
			[]string{`cases[0].oldObject: Required value: an UPDATE has an old object`}},
		{"PATCH is not an admission operation", head + "cases:\n- name: a\n  operation: PATCH\n" + pod,
			[]string{`cases[0].operation: Unsupported value: "PATCH"`}},
		{"a DELETE with an object and an old object", head + "cases:\n- name: a\n  operation: DELETE\n" + pod + "  oldObject: p.yaml\n",
			[]string{`cases[0].object: Forbidden: a DELETE has no object: give the deleted object as oldObject (or as object)`}},
		{"a DELETE with a final-object expectation", head + "cases:\n- name: a\n  operation: DELETE\n" + pod + "  expect:\n    unchanged: true\n",
			[]string{`cases[0].expect.unchanged: Forbidden: a DELETE has no final object`}},
		{"a CREATE with an old object", head + "cases:\n- name: a\n  operation: CREATE\n" + pod + "  oldObject: p.yaml\n",
			[]string{`cases[0].oldObject: Forbidden: only an UPDATE or a DELETE has an old object, not a CREATE`}},
		{"a denial with a final-object expectation", head + "cases:\n- name: a\n" + pod + "  expect:\n    denied: true\n    unchanged: true\n",
			[]string{`cases[0].expect.unchanged: Forbidden: a denied request has no final object`}},
		{"a bad regex", head + "cases:\n- name: a\n" + pod + "  expect:\n    denied: {messageRegex: \"(\"}\n",
			[]string{`cases[0].expect.denied.messageRegex: Invalid value: "("`}},
		{"a bad cost key", head + "cases:\n- name: a\n" + pod + "  expect:\n    maxRuntimeCost: {\"p[x]\": 3}\n",
			[]string{`cases[0].expect.maxRuntimeCost[p[x]]: Invalid value`}},
		{"a bad service URL", head + "serviceURLs: [hooks/sidecar=http://127.0.0.1:1, nope]\ncases:\n- name: a\n" + pod,
			[]string{`serviceURLs[0]: Invalid value: "hooks/sidecar=http://127.0.0.1:1": service URL "hooks/sidecar=http://127.0.0.1:1": the URL must be https`,
				`serviceURLs[1]: Invalid value: "nope": service URL "nope": want NS/NAME[:PORT]=URL`}},
		{"an empty webhooks path", head + "webhooks: [\"\"]\ncases:\n- name: a\n" + pod,
			[]string{`webhooks[0]: Required value`}},
		{"a malformed webhook name in applied", head + "cases:\n- name: a\n" + pod + "  expect:\n    applied: [\"webhook:\", \"webhook:a/b/c\"]\n",
			[]string{`cases[0].expect.applied[0]: Invalid value: "webhook:": must be webhook:CONFIGURATION or webhook:CONFIGURATION/WEBHOOK`,
				`cases[0].expect.applied[1]: Invalid value: "webhook:a/b/c"`}},
		{"neither policies nor webhooks", "apiVersion: mutatis.dev/v1alpha1\nkind: PolicyTest\npolicies: []\ncases:\n- name: a\n" + pod,
			[]string{`policies: Required value`}},
		{"two documents", head + "cases: []\n---\n" + head, []string{"one PolicyTest document, found 2"}},
		{"YAML syntax", "cases: [", []string{"s.mutatis-test.yaml: "}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseSuite("dir/s.mutatis-test.yaml", []byte(tc.yaml))
			if err == nil {
				t.Fatal("no error")
			}
			if text := err.Error(); strings.Contains(text, "<nil>") || strings.Contains(text, "null") {
				t.Errorf("error has <nil> or null noise:\n%s", text)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error()+"\n", w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

func TestParseSuiteAcceptsEveryShapeOfAField(t *testing.T) {
	s, err := ParseSuite("dir/shapes.mutatis-test.yaml", []byte(`apiVersion: mutatis.dev/v1alpha1
kind: PolicyTest
policies: [p.yaml]
resources: [r.yaml, {apiVersion: v1, kind: Namespace, metadata: {name: shop}}]
cases:
- name: denied is true
  object: pod.yaml
  expect: {denied: true}
- name: denied is a substring
  objectRef: {kind: Pod, name: web}
  expect: {denied: "not allowed"}
- name: denied is an object
  object: {apiVersion: v1, kind: Pod, metadata: {name: web}}
  expect: {denied: {message: x, messageRegex: "^p", code: 403}}
- name: old object makes an UPDATE
  object: pod.yaml
  oldObject: pod.yaml
  expect: {patch: [], maxRuntimeCost: {p: 10, "p[1]": 5}}
`))
	if err != nil {
		t.Fatal(err)
	}
	if s.Metadata.Name != "shapes" {
		t.Errorf("name %q, want the file name without the suffix", s.Metadata.Name)
	}
	if r := s.Resources; r[0].Path != "r.yaml" || r[1].Inline["kind"] != "Namespace" {
		t.Errorf("resources %+v", r)
	}
	if d := s.Cases[0].Expect.Denied; d == nil || *d != (Denial{}) {
		t.Errorf("denied: true gave %+v", d)
	}
	if d := s.Cases[1].Expect.Denied; d == nil || d.Message != "not allowed" {
		t.Errorf("denied: string gave %+v", d)
	}
	if d := s.Cases[2].Expect.Denied; d == nil || d.Code != 403 || d.MessageRegex != "^p" {
		t.Errorf("denied: object gave %+v", d)
	}
	if op := s.Cases[3].operation(s.Defaults); op != "UPDATE" {
		t.Errorf("operation %s, want UPDATE", op)
	}
	if p := s.Cases[3].Expect.Patch; p == nil || len(*p) != 0 {
		t.Errorf("patch: [] gave %v, want an empty, set patch", p)
	}
}
