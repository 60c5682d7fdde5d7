package lint

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/cluster"
	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/manifest"
)

// The corpus: every file of testdata/corpus holds policies, bindings and
// the objects of requests, and says in "# lint: …" comment lines what the
// checks must find: "# lint: clean" (nothing), or one line per finding
// "# lint: error CHECK" / "# lint: warning CHECK" (the checks found, as a
// multiset; order does not matter). "# lint-option: resources" lints the
// file as if its objects were given with --resources.
//
// Every finding of severity error has its runtime twin checked: each
// request object of the file is admitted through the engine (as mutatis
// apply does) and must be denied with the runtime's words the finding
// quotes. A clean file's requests must be admitted: the checks never
// reject a policy that can succeed.

var wantRE = regexp.MustCompile(`(?m)^# lint: (.*)$`)

// quotedRuntime is the runtime message a finding quotes.
var quotedRuntime = regexp.MustCompile(`at run time[^:]*: "((?:[^"\\]|\\.)*)"`)

func TestCorpus(t *testing.T) {
	files, err := filepath.Glob("testdata/corpus/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			clean := false
			for _, m := range wantRE.FindAllStringSubmatch(string(data), -1) {
				if m[1] == "clean" {
					clean = true
					continue
				}
				want = append(want, strings.TrimSpace(m[1]))
			}
			if !clean && len(want) == 0 {
				t.Fatal("no # lint: expectation")
			}
			findings, set := lintFiles(t, strings.Contains(string(data), "# lint-option: resources"), file)
			var got []string
			for _, f := range findings {
				got = append(got, f.Severity.String()+" "+f.Check)
			}
			sort.Strings(got)
			sort.Strings(want)
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("findings:\n%s\nwant:\n%s\n\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"), renderFindings(findings))
			}
			t.Log(renderFindings(findings))
			checkRuntimeTwins(t, set, findings)
		})
	}
}

func renderFindings(fs []Finding) string {
	var b strings.Builder
	for _, f := range fs {
		b.WriteString(f.String())
		b.WriteString("\n")
	}
	return b.String()
}

// lintFiles loads paths and runs every check on them.
func lintFiles(t *testing.T, resources bool, paths ...string) ([]Finding, *manifest.Set) {
	t.Helper()
	set, err := manifest.Load(context.Background(), paths, nil)
	if err != nil {
		t.Fatalf("loading: %v", err)
	}
	comp, err := compiler.New()
	if err != nil {
		t.Fatal(err)
	}
	c := NewChecker(set.Objects, resources)
	var out []Finding
	for _, p := range set.Policies {
		cp, err := comp.Compile(p.Policy)
		if err != nil {
			t.Fatal(err)
		}
		if errs := cp.Errors(); len(errs) > 0 {
			t.Fatalf("policy %s does not compile: %v", p.Policy.Name, errs)
		}
		out = append(out, c.Policy(p, cp)...)
	}
	out = append(out, c.Set(set)...)
	return out, set
}

// requestKinds are the kinds of a corpus file's documents that are not
// requests.
var notRequests = map[string]bool{"CustomResourceDefinition": true, "Namespace": true, "ConfigMap": true, "Sidecar": true, "WidgetDefault": true}

// checkRuntimeTwins admits every request object of set and checks it
// against the error findings: each must be denied with the quoted runtime
// message; with no error finding, each must be admitted.
func checkRuntimeTwins(t *testing.T, set *manifest.Set, findings []Finding) {
	t.Helper()
	var quotes []string
	for _, f := range findings {
		if f.Severity != Error {
			continue
		}
		m := quotedRuntime.FindStringSubmatch(f.Message)
		if m == nil {
			t.Errorf("error finding quotes no runtime message: %s", f)
			continue
		}
		q := strings.ReplaceAll(strings.ReplaceAll(m[1], `\"`, `"`), "[*]", "[0]")
		quotes = append(quotes, q)
	}
	var requests []manifest.Object
	var others []manifest.Object
	for _, o := range set.Objects {
		if notRequests[o.Object.GetKind()] {
			others = append(others, o)
		} else {
			requests = append(requests, o)
		}
	}
	if len(quotes) > 0 && len(requests) == 0 {
		t.Fatal("error findings but no request object to run them")
	}
	sim, err := cluster.New(others, cluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	comp, err := compiler.New()
	if err != nil {
		t.Fatal(err)
	}
	policies, bindings := set.APIObjects()
	ev, err := sim.Evaluator(comp, policies, bindings)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range requests {
		req := cluster.Request{Object: r.Object.DeepCopy()}
		// A request object annotated lint.test/subresource is an UPDATE of
		// that subresource (the object is its own old object).
		if sub := r.Object.GetAnnotations()["lint.test/subresource"]; sub != "" {
			req.OldObject, req.Subresource = r.Object.DeepCopy(), sub
		}
		a, err := sim.Attributes(req)
		if err != nil {
			t.Fatalf("request %s: %v", r.Source, err)
		}
		res, err := new(chain.Runner).Run(context.Background(), a, ev)
		denied := ""
		defer func() { t.Logf("request %s: %s", r.Source, denied) }()
		if err != nil {
			denied = err.Error()
		} else if res.Denied != nil {
			denied = res.Denied.Error()
		}
		if len(quotes) == 0 {
			if denied != "" {
				t.Errorf("request %s denied, but lint found no error: %s", r.Source, denied)
			}
			continue
		}
		if denied == "" {
			t.Errorf("request %s admitted, but lint found errors:\n%s", r.Source, renderFindings(findings))
			continue
		}
		for _, q := range quotes {
			if !strings.Contains(denied, q) {
				t.Errorf("request %s denied with\n  %s\nwhich lacks the runtime message lint quotes:\n  %s", r.Source, denied, q)
			}
		}
	}
}
