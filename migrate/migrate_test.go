package migrate

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mutatis-dev/mutatis/manifest"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func TestParseReplacements(t *testing.T) {
	for _, tc := range []struct {
		in      []string
		want    []Replacement
		wantErr string
	}{
		{in: nil, want: []Replacement{}},
		{in: []string{"inject=sidecar.example.com"}, want: []Replacement{{"inject", "sidecar.example.com"}}},
		{in: []string{"inject=injector/sidecar.example.com"}, want: []Replacement{{"inject", "injector/sidecar.example.com"}}},
		{in: []string{"inject"}, wantErr: `--replaces "inject": want POLICY=WEBHOOK`},
		{in: []string{"=w"}, wantErr: `--replaces "=w": want POLICY=WEBHOOK`},
		{in: []string{"p="}, wantErr: `--replaces "p=": want POLICY=WEBHOOK`},
	} {
		got, err := ParseReplacements(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: error %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || len(got) != len(tc.want) {
			t.Fatalf("%q: %v, %v", tc.in, got, err)
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%q: %v, want %v", tc.in, got, tc.want)
			}
		}
	}
}

func configs() []*admissionregistrationv1.MutatingWebhookConfiguration {
	hook := func(name string) admissionregistrationv1.MutatingWebhook {
		return admissionregistrationv1.MutatingWebhook{Name: name}
	}
	return []*admissionregistrationv1.MutatingWebhookConfiguration{
		{ObjectMeta: metav1.ObjectMeta{Name: "injector"}, Webhooks: []admissionregistrationv1.MutatingWebhook{hook("sidecar.example.com"), hook("labels.example.com")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "stamper"}, Webhooks: []admissionregistrationv1.MutatingWebhook{hook("labels.example.com")}},
	}
}

func names(cs []*admissionregistrationv1.MutatingWebhookConfiguration) string {
	var out []string
	for _, c := range cs {
		for _, w := range c.Webhooks {
			out = append(out, c.Name+"/"+w.Name)
		}
	}
	return strings.Join(out, ",")
}

func TestWithout(t *testing.T) {
	policies := []string{"inject", "stamp"}
	for _, tc := range []struct {
		name    string
		repl    []Replacement
		want    string
		wantErr []string
	}{
		{name: "no mapping drops every webhook", want: ""},
		{name: "one webhook by name", repl: []Replacement{{"inject", "sidecar.example.com"}}, want: "injector/labels.example.com,stamper/labels.example.com"},
		{name: "a name in two configurations drops both", repl: []Replacement{{"stamp", "labels.example.com"}}, want: "injector/sidecar.example.com"},
		{name: "qualified by configuration", repl: []Replacement{{"stamp", "stamper/labels.example.com"}}, want: "injector/sidecar.example.com,injector/labels.example.com"},
		{name: "configuration left empty is dropped", repl: []Replacement{{"inject", "injector/sidecar.example.com"}, {"stamp", "injector/labels.example.com"}}, want: "stamper/labels.example.com"},
		{name: "unknown webhook", repl: []Replacement{{"inject", "nope.example.com"}},
			wantErr: []string{`--replaces inject=nope.example.com: no webhook "nope.example.com" in --webhooks (have: injector/sidecar.example.com, injector/labels.example.com, stamper/labels.example.com)`}},
		{name: "unknown policy and webhook in the wrong configuration", repl: []Replacement{{"nope", "stamper/sidecar.example.com"}},
			wantErr: []string{`no MutatingAdmissionPolicy "nope" in --policies (have: inject, stamp)`, `no webhook "stamper/sidecar.example.com"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := configs()
			got, err := Without(in, tc.repl, policies)
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("no error, want %q", tc.wantErr)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not say %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if n := names(got); n != tc.want {
				t.Errorf("kept %q, want %q", n, tc.want)
			}
			if n := names(in); n != names(configs()) {
				t.Errorf("the input changed: %q", n)
			}
		})
	}
}

func pod(name string, labels map[string]string) map[string]any {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": name, "namespace": "shop"},
		"spec":     map[string]any{"containers": []any{map[string]any{"name": "app", "image": "nginx:1.27"}}},
	}}
	u.SetLabels(labels)
	return u.Object
}

func TestCheck(t *testing.T) {
	objects := []manifest.Object{}
	for _, name := range []string{"same", "changed", "denied", "both-denied", "broken"} {
		objects = append(objects, manifest.Object{Source: manifest.Source{File: "pods.yaml", Doc: len(objects), Item: -1}, Object: &unstructured.Unstructured{Object: pod(name, nil)}})
	}
	webhooks := func(_ context.Context, o manifest.Object) (Outcome, error) {
		switch n := o.Object.GetName(); n {
		case "both-denied":
			return Outcome{Refused: `admission webhook "sidecar.example.com" denied the request: no`, Code: 403}, nil
		default:
			return Outcome{Object: pod(n, map[string]string{"team": "shop"})}, nil
		}
	}
	policies := func(_ context.Context, o manifest.Object) (Outcome, error) {
		switch n := o.Object.GetName(); n {
		case "changed":
			return Outcome{Object: pod(n, map[string]string{"team": "Shop"})}, nil
		case "denied", "both-denied":
			return Outcome{Refused: "policy 'stamp' with binding 'stamp' denied request: expression 'object.metadata.labels.team' resulted in error: no such key: team", Code: 403}, nil
		case "broken":
			return Outcome{}, errors.New("pods.yaml: bad object")
		default:
			return Outcome{Object: pod(n, map[string]string{"team": "shop"})}, nil
		}
	}
	rep, err := Check(context.Background(), objects, webhooks, policies)
	if err != nil {
		t.Fatal(err)
	}
	want := []Difference{Same, Changed, Refusal, Refusal, Failed}
	for i, res := range rep.Results {
		if res.Difference != want[i] {
			t.Errorf("%s: %s, want %s", res.Object, res.Difference, want[i])
		}
	}
	if s := rep.Summary; s != (Summary{Objects: 5, Same: 1, Changed: 1, Refusal: 2, Failed: 1}) || !rep.Differs() {
		t.Errorf("summary %+v", s)
	}
	var buf bytes.Buffer
	if err := rep.WriteText(&buf, true); err != nil {
		t.Fatal(err)
	}
	golden(t, "check.txt", buf.Bytes())

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Check(ctx, objects, webhooks, policies); !errors.Is(err, context.Canceled) {
		t.Errorf("a done context: %v", err)
	}
	same, err := Check(context.Background(), objects[:1], webhooks, webhooks)
	if err != nil || same.Differs() {
		t.Errorf("the same side twice differs: %+v, %v", same, err)
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test -update to accept):\n%s", path, got)
	}
}

// A ValidatingAdmissionPolicy replaces a webhook of the
// ValidatingWebhookConfigurations, a MutatingAdmissionPolicy one of the
// mutating ones, a name in both kinds of configuration is taken out of
// the kind its policy replaces only, and a policy of neither kind is named
// in the error with both kinds.
func TestWithoutAll(t *testing.T) {
	validating := []*admissionregistrationv1.ValidatingWebhookConfiguration{
		{ObjectMeta: metav1.ObjectMeta{Name: "checks"}, Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "require-team.example.com"}, {Name: "labels.example.com"}}},
	}
	vnames := func(cs []*admissionregistrationv1.ValidatingWebhookConfiguration) string {
		var out []string
		for _, c := range cs {
			for _, w := range c.Webhooks {
				out = append(out, c.Name+"/"+w.Name)
			}
		}
		return strings.Join(out, ",")
	}
	for _, tc := range []struct {
		name         string
		repl         []Replacement
		wantM, wantV string
		wantErr      string
	}{
		{name: "no mapping drops every webhook of both kinds"},
		{name: "a VAP takes a validating webhook out", repl: []Replacement{{"require-team", "require-team.example.com"}},
			wantM: "injector/sidecar.example.com,injector/labels.example.com,stamper/labels.example.com", wantV: "checks/labels.example.com"},
		{name: "a name of both kinds: the MAP's kind only", repl: []Replacement{{"stamp", "labels.example.com"}},
			wantM: "injector/sidecar.example.com", wantV: "checks/require-team.example.com,checks/labels.example.com"},
		{name: "a VAP naming a mutating webhook", repl: []Replacement{{"require-team", "sidecar.example.com"}},
			wantErr: `--replaces require-team=sidecar.example.com: no webhook "sidecar.example.com" in --webhooks (have: checks/require-team.example.com, checks/labels.example.com)`},
		{name: "a policy of neither kind", repl: []Replacement{{"nope", "labels.example.com"}},
			wantErr: `no MutatingAdmissionPolicy or ValidatingAdmissionPolicy "nope" in --policies (have: inject, stamp, require-team)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, v, err := WithoutAll(configs(), validating, tc.repl, []string{"inject", "stamp"}, []string{"require-team"})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if names(m) != tc.wantM || vnames(v) != tc.wantV {
				t.Errorf("kept %q and %q, want %q and %q", names(m), vnames(v), tc.wantM, tc.wantV)
			}
		})
	}
}
