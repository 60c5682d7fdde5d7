package source

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/mutatis-dev/mutatis/matching"
)

func TestStaticSourceReloadsChangedFiles(t *testing.T) {
	dir := t.TempDir()
	policy := func(label string) string {
		return `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: label}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["configmaps"]}]
  reinvocationPolicy: Never
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: 'Object{metadata: Object.metadata{labels: {"stage": "` + label + `"}}}'
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: label}
spec: {policyName: label}
`
	}
	file := filepath.Join(dir, "policy.yaml")
	write := func(content string) {
		t.Helper()
		if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(policy("one"))
	ctx := context.Background()
	src, err := NewFiles(Options{Policies: []string{dir}}, 0, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	fp := src.fingerprint()
	st, err := src.load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	eng := st.Engine()
	label := func() string {
		t.Helper()
		cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c", "namespace": "default"}}}
		res, err := eng.Admit(ctx, &matching.Attributes{
			Operation: admission.Create, Kind: cm.GroupVersionKind(),
			Resource: matching.DefaultTable().ResourcesForKind(cm.GroupVersionKind())[0].GroupVersionResource(),
			Name:     "c", Namespace: "default", Object: cm, UserInfo: &user.DefaultInfo{Name: "admin"},
		})
		if err != nil || res.Denied != nil {
			t.Fatalf("admit: %v %v", err, res.Denied)
		}
		v, _, _ := unstructured.NestedString(res.Object, "metadata", "labels", "stage")
		return v
	}

	steps := []struct {
		name      string
		content   string // "" leaves the file as it is
		wantLabel string
	}{
		{name: "the first load is served", wantLabel: "one"},
		{name: "unchanged files are not read again", wantLabel: "one"},
		{name: "a changed file is swapped in", content: policy("second"), wantLabel: "second"},
		{name: "a broken file leaves the last good policies in service", content: "kind: [", wantLabel: "second"},
		{name: "a repaired file is swapped in", content: policy("third!"), wantLabel: "third!"},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if st.content != "" {
				write(st.content)
				// The fingerprint sees sizes and times; make the time differ
				// even on coarse file systems.
				mt := time.Now().Add(time.Duration(len(st.content)) * time.Second)
				if err := os.Chtimes(file, mt, mt); err != nil {
					t.Fatal(err)
				}
			}
			fp = src.reload(ctx, eng, fp)
			if got := label(); got != st.wantLabel {
				t.Errorf("label %q, want %q", got, st.wantLabel)
			}
		})
	}
}
