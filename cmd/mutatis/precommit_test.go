package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// The pre-commit hooks (.pre-commit-hooks.yaml) name real commands of this
// CLI, and run as pre-commit runs them: the entry, then the changed files
// that match `files` when pass_filenames is true.
func TestPreCommitHooks(t *testing.T) {
	data, err := os.ReadFile("../../.pre-commit-hooks.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var hooks []struct {
		ID            string `json:"id"`
		Name          string `json:"name"`
		Description   string `json:"description"`
		Entry         string `json:"entry"`
		Language      string `json:"language"`
		Files         string `json:"files"`
		PassFilenames bool   `json:"pass_filenames"`
	}
	if err := yaml.UnmarshalStrict(data, &hooks); err != nil {
		t.Fatalf(".pre-commit-hooks.yaml: %v", err)
	}
	changed := []string{"../../examples/default-resources/policy.yaml", "../../examples/default-resources/resources.yaml", "../../README.md"}
	ids := map[string]bool{}
	for _, h := range hooks {
		ids[h.ID] = true
		t.Run(h.ID, func(t *testing.T) {
			words := strings.Fields(h.Entry)
			if len(words) < 2 || words[0] != "mutatis" {
				t.Fatalf("entry %q does not run mutatis", h.Entry)
			}
			if h.Language != "system" || h.Name == "" || h.Description == "" {
				t.Errorf("hook %+v", h)
			}
			cmd, _, err := newRootCommand(nil, nil, nil).Find(words[1:])
			if err != nil || cmd.Name() != words[1] {
				t.Fatalf("entry %q: no command %s (%v)", h.Entry, words[1], err)
			}
			files := regexp.MustCompile(h.Files)
			args := words[1:]
			if h.PassFilenames {
				for _, f := range changed {
					if files.MatchString(f) {
						args = append(args, f)
					}
				}
			} else {
				args = append(args, "../../examples")
			}
			if files.MatchString("README.md") || !files.MatchString("policy.yaml") {
				t.Errorf("files %q", h.Files)
			}
			code, out, errOut := runCLI(t, "", args...)
			if code != exitOK {
				t.Errorf("mutatis %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
			}
		})
	}
	if !ids["mutatis-lint"] || !ids["mutatis-test"] {
		t.Errorf("hooks %v, want mutatis-lint and mutatis-test", ids)
	}
}
