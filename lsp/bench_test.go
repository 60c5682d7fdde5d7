package lsp

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mutatis-dev/mutatis/compiler"
)

// workspace50 is a workspace of 50 policies and their bindings: the
// sidecar-injection example under 50 names, one file each.
func workspace50(b *testing.B) (map[string]*fileState, string, string) {
	data, err := os.ReadFile(filepath.Join("..", "examples", "sidecar-injection", "policy.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	files := map[string]*fileState{}
	var first, text string
	for i := range 50 {
		path := fmt.Sprintf("/ws/policy-%02d.yaml", i)
		t := strings.ReplaceAll(string(data), "inject-logging-sidecar", fmt.Sprintf("inject-logging-sidecar-%02d", i))
		files[path] = newFileState(path, []byte(t))
		if i == 0 {
			first, text = path, t
		}
	}
	return files, first, text
}

// BenchmarkDiagnostics is the work of one change in a 50-policy
// workspace: the changed file parsed, every policy checked again (the
// unchanged ones from the compiler's cache), the diagnostics mapped.
func BenchmarkDiagnostics(b *testing.B) {
	files, path, text := workspace50(b)
	comp, err := compiler.New()
	if err != nil {
		b.Fatal(err)
	}
	cache := &policyCache{}
	analyze(comp, files, cache)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		// A new text each time: the changed policy compiles anew.
		t := strings.Replace(text, `"log-shipper")`, fmt.Sprintf(`"log-shipper-%d")`, i), 1)
		files[path] = newFileState(path, []byte(t))
		a := analyze(comp, files, cache)
		if len(a.Diagnostics) != 50 {
			b.Fatalf("%d files", len(a.Diagnostics))
		}
	}
}

// BenchmarkCompletion is one completion of object.spec. in that
// workspace's analysis.
func BenchmarkCompletion(b *testing.B) {
	files, path, text := workspace50(b)
	comp, err := compiler.New()
	if err != nil {
		b.Fatal(err)
	}
	a := analyze(comp, files, nil)
	off := strings.Index(text, "!object.spec.containers") + len("!object.spec.")
	b.ResetTimer()
	for b.Loop() {
		if items := a.complete(path, off); len(items) < 10 {
			b.Fatalf("%d items", len(items))
		}
	}
}

// BenchmarkCompletionAuthorizer is one completion of an authorizer chain
// (authorizer.group("").resource("pods").) in a matchCondition of that
// workspace: the receiver type-checked in the site's environment, the
// environment's member overloads of its type listed.
func BenchmarkCompletionAuthorizer(b *testing.B) {
	files, path, text := workspace50(b)
	const chain = "authorizer.group('').resource('pods')."
	text = strings.Replace(text, "!object.spec.containers", chain+"check('create').allowed() && !object.spec.containers", 1)
	files[path] = newFileState(path, []byte(text))
	comp, err := compiler.New()
	if err != nil {
		b.Fatal(err)
	}
	a := analyze(comp, files, nil)
	off := strings.Index(text, chain) + len(chain)
	b.ResetTimer()
	for b.Loop() {
		if items := a.complete(path, off); len(items) != 6 {
			b.Fatalf("%d items: %v", len(items), labelsOf(items))
		}
	}
}
