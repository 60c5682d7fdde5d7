package policytest

import (
	"os"
	"regexp"
	"testing"
)

// TestSkillDocumentSuiteParses keeps the suite of the coding agents' skill
// document (docs/skills/mutatis-policytest/SKILL.md) a valid suite: it
// parses, validates and matches the JSON schema.
func TestSkillDocumentSuiteParses(t *testing.T) {
	data, err := os.ReadFile("../docs/skills/mutatis-policytest/SKILL.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindSubmatch(data)
	if m == nil {
		t.Fatal("SKILL.md has no yaml block")
	}
	s, err := ParseSuite("SKILL.md", m[1])
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Cases) != 2 || s.Cases[1].Operation != "UPDATE" {
		t.Fatalf("cases = %+v", s.Cases)
	}
	if err := compileSchema(t).Validate(yamlDoc(t, m[1])); err != nil {
		t.Fatal(err)
	}
}
