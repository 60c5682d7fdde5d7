package audit

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	clienttesting "k8s.io/client-go/testing"
	"sigs.k8s.io/yaml"

	"github.com/mutatis-dev/mutatis/internal/jsonvalue"
	"github.com/mutatis-dev/mutatis/jsonpatch"
	"github.com/mutatis-dev/mutatis/matching"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// runAudit audits testdata/cluster.yaml with testdata/policies.yaml.
func runAudit(t *testing.T, mod func(*Options)) (*Report, *Auditor) {
	t.Helper()
	client := fakeCluster(t, "testdata/cluster.yaml")
	o := loadPolicies(t, "testdata/policies.yaml")
	o.Lister = &Lister{Client: client, PageSize: 2}
	o.Workers = 3
	if mod != nil {
		mod(&o)
	}
	a, err := New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := a.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	listed := listedResources(client)
	if listed["secrets"] {
		t.Errorf("secrets were listed: no policy names them")
	}
	return rep, a
}

func findingOf(rep *Report, name string) *Finding {
	for i := range rep.Findings {
		if rep.Findings[i].Name == name {
			return &rep.Findings[i]
		}
	}
	return nil
}

func TestAuditOutcomes(t *testing.T) {
	rep, a := runAudit(t, nil)
	var targets []string
	for _, r := range a.Targets() {
		targets = append(targets, resourceName(r))
	}
	if want := []string{"configmaps", "pods", "deployments.apps"}; !slices.Equal(targets, want) {
		t.Errorf("targets = %v, want %v", targets, want)
	}
	cases := []struct {
		name    string
		outcome Outcome
		detail  string
	}{
		{"settings", OutcomeChange, `{"op":"add","path":"/metadata/labels","value":{"audited":"true"}}`},
		{"web", OutcomeChange, `{"op":"add","path":"/metadata/labels/audited","value":"true"}`},
		{"broken", OutcomeDeny, `policy 'needs-owner' with binding 'needs-owner' denied request`},
		{"too-long", OutcomeInvalid, `must be no more than 63 bytes`},
		{"ignore-me", OutcomeIgnored, `policy 'best-effort' with binding 'best-effort' denied request`},
		{"lonely", OutcomeChange, `audit.example.com/seen`},
	}
	for _, c := range cases {
		t.Run(c.name+" would "+verb(c.outcome), func(t *testing.T) {
			f := findingOf(rep, c.name)
			if f == nil {
				t.Fatalf("no finding for %s", c.name)
			}
			if f.Outcome != c.outcome {
				t.Fatalf("outcome %s, want %s: %+v", f.Outcome, c.outcome, f)
			}
			if text := findingText(*f); !strings.Contains(text, c.detail) {
				t.Errorf("finding does not contain %q:\n%s", c.detail, text)
			}
		})
	}
	for _, name := range []string{"already", "system"} {
		if f := findingOf(rep, name); f != nil {
			t.Errorf("%s should be unchanged: %+v", name, f)
		}
	}
	// 6 ConfigMaps, 4 Pods, 1 Deployment.
	if rep.Summary.Objects != 11 || rep.Summary.Outcomes[OutcomeUnchanged] != 2 {
		t.Errorf("summary = %+v", rep.Summary)
	}
}

func TestAuditGroupsPodsByController(t *testing.T) {
	rep, _ := runAudit(t, nil)
	var pods []Finding
	for _, f := range rep.Findings {
		if f.Resource == "pods" {
			pods = append(pods, f)
		}
	}
	if len(pods) != 2 {
		t.Fatalf("pods findings = %+v, want the ReplicaSet's and lonely", pods)
	}
	rs := pods[slices.IndexFunc(pods, func(f Finding) bool { return f.Owner != "" })]
	if rs.Owner != "ReplicaSet/web-7d9c5" || rs.Count != 3 || rs.Object() != "team-a/ReplicaSet/web-7d9c5 (3 pods)" {
		t.Errorf("grouped finding = %+v", rs)
	}
	t.Run("with AllPods every Pod is listed", func(t *testing.T) {
		rep, _ := runAudit(t, func(o *Options) { o.AllPods = true })
		n := 0
		for _, f := range rep.Findings {
			if f.Resource == "pods" {
				n++
				if f.Count != 1 || f.Owner != "" {
					t.Errorf("finding = %+v", f)
				}
			}
		}
		if n != 4 {
			t.Errorf("%d pod findings, want 4", n)
		}
	})
}

func TestAuditUpdateKeepsStoredFields(t *testing.T) {
	rep, _ := runAudit(t, func(o *Options) {
		o.Operation = admission.Update
		o.Kinds = []Kind{{Name: "deployment", Group: "apps", Grouped: true}}
	})
	if got := rep.Summary.Resources; !slices.Equal(got, []string{"deployments.apps"}) {
		t.Fatalf("resources = %v", got)
	}
	f := findingOf(rep, "web")
	if f == nil || f.Outcome != OutcomeChange {
		t.Fatalf("web: %+v", f)
	}
	// An update keeps the status and the generation of the stored object:
	// the patch only adds the label.
	if f.Patch != `[{"op":"add","path":"/metadata/labels/audited","value":"true"}]` {
		t.Errorf("patch = %s", f.Patch)
	}
}

func TestAuditNamespacesAndSelector(t *testing.T) {
	rep, _ := runAudit(t, func(o *Options) { o.Namespaces = []string{"kube-system"} })
	if rep.Summary.Objects != 1 || len(rep.Findings) != 0 {
		t.Errorf("kube-system: %+v %+v", rep.Summary, rep.Findings)
	}
	rep, _ = runAudit(t, func(o *Options) { o.Selector = "app=web" })
	if rep.Summary.Objects != 4 { // the Deployment and its 3 Pods
		t.Errorf("app=web: %d objects", rep.Summary.Objects)
	}
}

func TestAuditPerPolicyCountsAndCosts(t *testing.T) {
	rep, _ := runAudit(t, nil)
	stats := map[string]PolicyStats{}
	for _, s := range rep.Policies {
		stats[s.PolicyBinding.String()] = s
	}
	if s := stats["audited-label/audited-label"]; s.Applied != 2 || s.Changed != 2 || s.ConditionFalse != 4 {
		t.Errorf("audited-label: %#v", s)
	}
	if s := stats["pod-annotation/pod-annotation"]; s.Applied != 4 || s.Changed != 4 {
		t.Errorf("pod-annotation: %+v", s)
	}
	if s := stats["needs-owner/needs-owner"]; s.Errors != 1 || s.Denied != 1 {
		t.Errorf("needs-owner: %+v", s)
	}
	if len(rep.Costs) == 0 || rep.Costs[0].Max <= 0 {
		t.Errorf("costs: %+v", rep.Costs)
	}
	for i := 1; i < len(rep.Costs); i++ {
		if rep.Costs[i].Max > rep.Costs[i-1].Max {
			t.Errorf("costs not heaviest first: %+v", rep.Costs)
		}
	}
}

func TestExplainObject(t *testing.T) {
	_, a := runAudit(t, nil)
	res, err := Kind{Name: "configmap"}.Resolve(a.Cluster().Table)
	if err != nil {
		t.Fatal(err)
	}
	obj, err := a.Get(context.Background(), res, "team-a", "settings")
	if err != nil {
		t.Fatal(err)
	}
	rep := a.Explain(context.Background(), res, obj)
	var b strings.Builder
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	golden(t, "explain-settings.txt", b.String())
}

// golden compares got with testdata/NAME (-update writes it).
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs (run with -update to accept):\n--- want\n%s\n--- got\n%s", name, want, got)
	}
}

func TestAuditClusterPolicies(t *testing.T) {
	client := fakeCluster(t, "testdata/cluster.yaml")
	files := loadPolicies(t, "testdata/policies.yaml")
	// The policies as the cluster stores them.
	for _, p := range files.Policies {
		addTyped(t, client, "MutatingAdmissionPolicy", p)
	}
	for _, b := range files.Bindings {
		addTyped(t, client, "MutatingAdmissionPolicyBinding", b)
	}
	a, err := New(context.Background(), Options{Lister: &Lister{Client: client}, ClusterPolicies: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Policies()) != 5 || len(a.Bindings()) != 5 {
		t.Fatalf("%d policies, %d bindings", len(a.Policies()), len(a.Bindings()))
	}
	rep, err := a.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want, _ := runAudit(t, nil)
	if rep.Headline()[:60] != want.Headline()[:60] || len(rep.Findings) != len(want.Findings) {
		t.Errorf("cluster policies: %s\nfiles: %s", rep.Headline(), want.Headline())
	}
}

func addTyped(t *testing.T, client interface {
	Tracker() clienttesting.ObjectTracker
}, kind string, obj any) {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion("admissionregistration.k8s.io/v1")
	u.SetKind(kind)
	gvr := schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: strings.ToLower(kind) + "s"}
	if kind == "MutatingAdmissionPolicy" {
		gvr.Resource = "mutatingadmissionpolicies"
	}
	if err := client.Tracker().Create(gvr, u, ""); err != nil {
		t.Fatal(err)
	}
}

func TestAuditProgress(t *testing.T) {
	var last Progress
	calls := 0
	rep, _ := runAudit(t, func(o *Options) {
		o.Progress = func(p Progress) { last = p; calls++ }
	})
	if calls == 0 {
		t.Fatal("Progress was never called")
	}
	if last.Listed != rep.Summary.Objects || last.Evaluated != rep.Summary.Objects || last.Remaining != 0 {
		t.Errorf("last progress %+v, %d objects", last, rep.Summary.Objects)
	}
}

func TestAuditReadsOnlyTheParamsBindingsName(t *testing.T) {
	client := fakeCluster(t, "testdata/cluster.yaml")
	o := loadPolicies(t, "testdata/params.yaml")
	o.Lister = &Lister{Client: client}
	a, err := New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := a.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var selectors []string
	for _, act := range client.Actions() {
		if l, ok := act.(clienttesting.ListActionImpl); ok && act.GetResource().Resource == "configmaps" {
			selectors = append(selectors, l.GetListRestrictions().Fields.String())
		}
	}
	if want := []string{"metadata.name=settings,metadata.namespace=team-a"}; !slices.Equal(selectors, want) {
		t.Errorf("configmaps listed with field selectors %q, want %q", selectors, want)
	}
	f := findingOf(rep, "web")
	if f == nil || f.Patch != `[{"op":"add","path":"/metadata/labels/color","value":"blue"}]` {
		t.Errorf("web: %+v", f)
	}
}

// TestPatchIsCreatePatch holds the audit's patch, which encodes the object
// only when the patch of the decoded values does not check, to
// jsonpatch.CreatePatch of the encoded object.
func TestPatchIsCreatePatch(t *testing.T) {
	obj := func(s string) map[string]any {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(s), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	pod := `{apiVersion: v1, kind: Pod, metadata: {name: p, labels: {a: b}}, spec: {containers: [{name: c, image: i, ports: [{containerPort: 80}]}]}}`
	cases := []struct {
		name          string
		before, after map[string]any
	}{
		{"a label added", obj(pod), obj(`{apiVersion: v1, kind: Pod, metadata: {name: p, labels: {a: b, c: d}}, spec: {containers: [{name: c, image: i, ports: [{containerPort: 80}]}]}}`)},
		{"a container added", obj(pod), obj(`{apiVersion: v1, kind: Pod, metadata: {name: p, labels: {a: b}}, spec: {containers: [{name: c, image: i, ports: [{containerPort: 80}]}, {name: s, image: j}]}}`)},
		{"keys to escape", obj(pod), obj(`{apiVersion: v1, kind: Pod, metadata: {name: p, labels: {a: b, "x/y~z": "1"}}, spec: {containers: [{name: c, image: i, ports: [{containerPort: 80}]}]}}`)},
		{"a float that is an integer", obj(`{a: 1}`), map[string]any{"a": 2.0}},
		{"a value JSON cannot carry", obj(`{a: 1}`), map[string]any{"a": math.NaN()}},
		{"nothing before", nil, obj(`{a: 1}`)},
		{"unchanged", obj(pod), obj(pod)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, gotErr := patch(c.before, c.after)
			original, err := jsonvalue.Marshal(c.before)
			if err != nil {
				t.Fatal(err)
			}
			want, wantErr := jsonpatch.CreatePatch(original, c.before, c.after)
			if string(got) != string(want) || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
				t.Errorf("patch = %s, %v; CreatePatch = %s, %v", got, gotErr, want, wantErr)
			}
		})
	}
}

// TestPrepareIsCopyAndDrop holds Prepare, which copies only what it keeps,
// to its definition: a deep copy of the object, then the fields dropped.
func TestPrepareIsCopyAndDrop(t *testing.T) {
	reference := func(obj *unstructured.Unstructured, res matching.Resource, op admission.Operation) *unstructured.Unstructured {
		out := obj.DeepCopy()
		if op != admission.Create {
			return out
		}
		meta, _ := out.Object["metadata"].(map[string]any)
		for _, f := range []string{"uid", "resourceVersion", "creationTimestamp", "generation", "managedFields", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"} {
			delete(meta, f)
		}
		if _, ok := res.Subresource("status"); ok {
			delete(out.Object, "status")
		}
		return out
	}
	var objects []*unstructured.Unstructured
	for _, p := range benchmarkPages {
		list := &unstructured.UnstructuredList{}
		if _, _, err := clientGoDecoder(t).Decode(p.data, nil, list); err != nil {
			t.Fatal(err)
		}
		objects = append(objects, &list.Items[0], &list.Items[1])
	}
	for _, o := range []map[string]any{
		{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any(nil), "status": map[string]any{"phase": "Running"}},
		{"apiVersion": "v1", "kind": "Pod", "metadata": "not a map"},
		{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "a", "deletionTimestamp": "2026-01-01T00:00:00Z", "deletionGracePeriodSeconds": int64(30), "selfLink": "/x"}, "status": "kept"},
		{"apiVersion": "v1", "kind": "ConfigMap"},
		nil,
	} {
		objects = append(objects, &unstructured.Unstructured{Object: o})
	}
	table := matching.DefaultTable()
	for _, obj := range objects {
		gvk := obj.GroupVersionKind()
		if gvk.Kind == "" {
			gvk = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
		}
		res := table.ResourcesForKind(gvk)[0]
		for _, op := range []admission.Operation{admission.Create, admission.Update} {
			before := obj.DeepCopy()
			got, want := Prepare(obj, res, op), reference(obj, res, op)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s %s: Prepare = %v, want %v", op, gvk.Kind, got, want)
			}
			if !reflect.DeepEqual(obj, before) {
				t.Errorf("%s %s: the object was modified", op, gvk.Kind)
			}
		}
	}
}
