package policytest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParseSuite checks that no input makes the PolicyTest loader panic,
// and that a refusal names the file: every suite of the repository and a
// few odd ones seed it.
func FuzzParseSuite(f *testing.F) {
	for _, pattern := range []string{"../examples/*/*.mutatis-test.yaml", "testdata/*/*.mutatis-test.yaml"} {
		files, _ := filepath.Glob(pattern)
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	f.Add([]byte("apiVersion: mutatis.dev/v1alpha1\nkind: PolicyTest\ncases: [{name: a, expect: {denied: {code: 99999999999}}}]\n"))
	f.Add([]byte("cases: [null, 1, {expect: {invalid: '('}}]\n"))
	f.Add([]byte("{\"cases\": [{\"name\": \"x\", \"object\": {\"kind\": 3}}]}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseSuite("fuzz.mutatis-test.yaml", data)
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz.mutatis-test.yaml") {
				t.Fatalf("the error does not name the file: %v", err)
			}
			return
		}
		if s == nil {
			t.Fatal("no suite and no error")
		}
	})
}
