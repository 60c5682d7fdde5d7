//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	evanphxjsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"

	"github.com/mutatis-dev/mutatis/audit"
	"github.com/mutatis-dev/mutatis/internal/jsonvalue"
	"github.com/mutatis-dev/mutatis/manifest"
	"github.com/mutatis-dev/mutatis/matching"
	"github.com/mutatis-dev/mutatis/scheme/admissionplugins"
)

// auditNamespaces are the seeded namespaces of TestAuditDifferential.
const auditNamespaces = 4

// seedAuditObjects are the objects of one namespace: ConfigMaps (some the
// policies skip, deny or make invalid), Secrets, Deployments and Pods (two
// ReplicaSets' and two of their own).
func seedAuditObjects(ns string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	add := func(s string, args ...any) { out = append(out, mustObject(fmt.Sprintf(s, args...))) }
	for j := range 24 {
		name := fmt.Sprintf("cm-%02d", j)
		labels := `{app: cm}`
		switch {
		case j%8 == 3:
			name += "-skip"
		case j%8 == 5:
			labels = `{app: cm, owner-required: "yes"}`
		case j == 7:
			name += "-long"
		}
		add(`{apiVersion: v1, kind: ConfigMap, metadata: {name: %s, namespace: %s, labels: %s}, data: {index: "%d"}}`, name, ns, labels, j)
	}
	for j := range 6 {
		add(`{apiVersion: v1, kind: Secret, metadata: {name: secret-%d, namespace: %s}, type: Opaque, stringData: {k: v}}`, j, ns)
	}
	for j := range 8 {
		add(`
apiVersion: apps/v1
kind: Deployment
metadata: {name: web-%d, namespace: %s, labels: {app: web-%d}}
spec:
  replicas: %d
  selector: {matchLabels: {app: web-%d}}
  template:
    metadata: {labels: {app: web-%d}}
    spec:
      containers: [{name: web, image: "nginx:1.27", ports: [{containerPort: 80}]}]
`, j, ns, j, j%3+1, j, j)
	}
	for j := range 12 {
		owner := ""
		if j < 10 {
			owner = fmt.Sprintf(`ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: web-%d-5d4f8, uid: 00000000-0000-0000-0000-00000000000%d, controller: true}]`, j%2, j%2)
		}
		add(`
apiVersion: v1
kind: Pod
metadata: {name: pod-%02d, namespace: %s, labels: {app: pod}, %s}
spec:
  containers: [{name: app, image: "busybox:1.36", command: [sleep, "3600"]}]
`, j, ns, owner)
	}
	return out
}

// TestAuditDifferential seeds a cluster, audits it with a policy set read
// from files (not yet in the cluster), then binds the policies and, for
// every seeded object, updates it without change (dry run) and re-creates
// it: what kube-apiserver stores (or its refusal) must be what the audit
// said it would store, for UPDATE and for CREATE; the audit's report
// (patches, outcomes) must say the same of each object, and --object
// (Explain) too.
func TestAuditDifferential(t *testing.T) {
	c := StartCluster(t, NativeMAP)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()

	var seeded []*unstructured.Unstructured
	for i := range auditNamespaces {
		ns := fmt.Sprintf("e2e-audit-%d", i)
		if _, err := c.Create(ctx, mustObject(`{apiVersion: v1, kind: Namespace, metadata: {name: `+ns+`, labels: {audit.mutatis.dev/seeded: "yes"}}}`), false); err != nil {
			t.Fatal(err)
		}
		for _, o := range seedAuditObjects(ns) {
			stored, err := c.Create(ctx, o, false)
			if err != nil {
				t.Fatalf("seeding %s: %v", kindKey(o), err)
			}
			seeded = append(seeded, stored)
		}
	}
	if len(seeded) < 200 {
		t.Fatalf("only %d objects seeded", len(seeded))
	}

	set, err := manifest.Load(ctx, []string{"testdata/audit/policies.yaml"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	policies, bindings := set.APIObjects()
	client, err := audit.NewClient(c.Config, audit.ClientOptions{QPS: 200, Burst: 400})
	if err != nil {
		t.Fatal(err)
	}
	auditor := func(op admission.Operation) *audit.Auditor {
		a, err := audit.New(ctx, audit.Options{
			Lister:   &audit.Lister{Client: client, PageSize: 50},
			Policies: policies, Bindings: bindings, Operation: op, User: adminInfo(), AllPods: true,
			AdmissionPlugins: admissionplugins.Flags{Disable: harnessDisabledPlugins},
		})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	type expectation struct {
		eval    *audit.Evaluation
		finding *audit.Finding
	}
	expect := func(op admission.Operation) (*audit.Auditor, map[string]expectation) {
		a := auditor(op)
		rep, err := a.Run(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %s", op, rep.Headline())
		findings := map[string]*audit.Finding{}
		for i := range rep.Findings {
			f := &rep.Findings[i]
			findings[f.Resource+" "+f.Namespace+"/"+f.Name] = f
		}
		out := map[string]expectation{}
		for _, o := range seeded {
			res := resourceOf(t, a, o)
			key := auditKey(res, o)
			out[key] = expectation{eval: a.Evaluate(ctx, res, o), finding: findings[key]}
		}
		return a, out
	}
	updateAuditor, updates := expect(admission.Update)
	createAuditor, creates := expect(admission.Create)

	// Bind the policies in the cluster.
	b := &barrier{c: c}
	for _, p := range set.Policies {
		addTypedPolicy(t, ctx, c, "MutatingAdmissionPolicy", p.Policy)
	}
	for _, bd := range set.Bindings {
		addTypedPolicy(t, ctx, c, "MutatingAdmissionPolicyBinding", bd.Binding)
	}
	b.sync(t, ctx)

	outcomes := map[audit.Outcome]int{}
	check := func(op admission.Operation, a *audit.Auditor, o *unstructured.Unstructured, want expectation, got *unstructured.Unstructured, err error) {
		t.Helper()
		res := resourceOf(t, a, o)
		key := auditKey(res, o)
		ev := want.eval
		outcomes[ev.Outcome]++
		server, oerr := outcomeOf(got, err)
		if oerr != nil {
			t.Fatalf("%s %s: %v", op, key, oerr)
		}
		var mine outcome
		switch {
		case ev.Outcome == audit.OutcomeDeny || ev.Outcome == audit.OutcomeInvalid || ev.Outcome == audit.OutcomeError:
			mine = outcome{Error: &statusOutcome{Message: ev.Message}}
			if server.Error != nil {
				server.Error = &statusOutcome{Message: server.Error.Message}
			}
		case ev.Admission == nil || ev.Admission.Stored == nil:
			t.Fatalf("%s %s: %s, but no stored object", op, key, ev.Outcome)
		default:
			mine = outcome{Object: normalize(ev.Admission.Stored)}
		}
		if d := diff("kube-apiserver", server, "mutatis audit", mine); d != "" {
			t.Errorf("%s %s: the audit (%s) is not what kube-apiserver does:\n%s", op, key, ev.Outcome, d)
		}
		// The report says the same of the object: its outcome, and a
		// patch that gives the admitted object.
		f := want.finding
		switch {
		case ev.Outcome == audit.OutcomeUnchanged && f != nil:
			t.Errorf("%s %s: unchanged, but the report lists it: %+v", op, key, f)
		case ev.Outcome != audit.OutcomeUnchanged && (f == nil || f.Outcome != ev.Outcome || f.Message != ev.Message || f.Patch != string(ev.Patch)):
			t.Errorf("%s %s: the report's finding %+v is not the evaluation's %s %s", op, key, f, ev.Outcome, ev.Patch)
		case ev.Outcome == audit.OutcomeChange:
			// Applied as kube-apiserver applies a webhook's patch.
			p, err := evanphxjsonpatch.DecodePatch([]byte(f.Patch))
			if err != nil {
				t.Fatalf("%s %s: patch %s: %v", op, key, f.Patch, err)
			}
			before, _ := json.Marshal(ev.Before)
			after, err := p.Apply(before)
			var patched map[string]any
			if err == nil {
				err = json.Unmarshal(after, &patched)
			}
			if err != nil || !jsonvalue.JSONEqual(patched, ev.Admission.Object) {
				t.Errorf("%s %s: the patch %s does not give the admitted object (%v)", op, key, f.Patch, err)
			}
		}
	}

	// UPDATE without change, as a dry run: the objects stay as seeded.
	for _, o := range seeded {
		res := resourceOf(t, updateAuditor, o)
		ri := c.Dynamic.Resource(res.GroupVersionResource()).Namespace(o.GetNamespace())
		got, err := ri.Update(ctx, o.DeepCopy(), metav1.UpdateOptions{DryRun: dryRunAll(true)})
		check(admission.Update, updateAuditor, o, updates[auditKey(res, o)], got, err)
	}
	// --object agrees for one object of each resource and outcome.
	explained := map[string]bool{}
	for _, o := range seeded {
		res := resourceOf(t, createAuditor, o)
		ev := creates[auditKey(res, o)].eval
		k := res.Resource + string(ev.Outcome)
		if explained[k] {
			continue
		}
		explained[k] = true
		cur, err := createAuditor.Get(ctx, res, o.GetNamespace(), o.GetName())
		if err != nil {
			t.Fatal(err)
		}
		r := createAuditor.Explain(ctx, res, cur)
		if r.Outcome != ev.Outcome || r.Message != ev.Message || string(r.Patch) != string(ev.Patch) {
			t.Errorf("--object %s: %s %s %s, the audit said %s %s %s", auditKey(res, o), r.Outcome, r.Message, r.Patch, ev.Outcome, ev.Message, ev.Patch)
		}
		acting, failing := 0, 0
		for _, v := range r.Verdicts {
			if v.Acts {
				acting++
			}
			if strings.Contains(v.Reason, "error") {
				failing++
			}
		}
		// This policy set has no mutation that leaves an object as it
		// was: a change (or a 422) has a policy acting, a denial one
		// failing, an unchanged object none acting.
		if ok := map[audit.Outcome]bool{
			audit.OutcomeChange: acting > 0, audit.OutcomeInvalid: acting > 0,
			audit.OutcomeDeny: failing > 0, audit.OutcomeUnchanged: acting == 0,
		}[ev.Outcome]; !ok {
			t.Errorf("--object %s: %d policies act, %d fail, outcome %s: %+v", auditKey(res, o), acting, failing, ev.Outcome, r.Verdicts)
		}
	}
	// CREATE: each object deleted and re-created as the audit prepared it.
	for _, o := range seeded {
		res := resourceOf(t, createAuditor, o)
		ri := c.Dynamic.Resource(res.GroupVersionResource()).Namespace(o.GetNamespace())
		zero := int64(0)
		if err := ri.Delete(ctx, o.GetName(), metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatalf("deleting %s: %v", kindKey(o), err)
		}
		if err := poll(ctx, 50*time.Millisecond, func(ctx context.Context) (bool, error) {
			_, err := ri.Get(ctx, o.GetName(), metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		}); err != nil {
			t.Fatalf("waiting for %s to go: %v", kindKey(o), err)
		}
		got, err := ri.Create(ctx, audit.Prepare(o, res, admission.Create), metav1.CreateOptions{})
		check(admission.Create, createAuditor, o, creates[auditKey(res, o)], got, err)
	}
	t.Logf("%d objects, UPDATE and CREATE; outcomes (both): %v", len(seeded), outcomes)
	for _, want := range []audit.Outcome{audit.OutcomeChange, audit.OutcomeDeny, audit.OutcomeInvalid, audit.OutcomeUnchanged} {
		if outcomes[want] == 0 {
			t.Errorf("no object with outcome %s: the differential does not cover it", want)
		}
	}
}

// resourceOf is the resource of a seeded object.
func resourceOf(t *testing.T, a *audit.Auditor, o *unstructured.Unstructured) matching.Resource {
	t.Helper()
	rs := a.Cluster().Table.ResourcesForKind(o.GroupVersionKind())
	if len(rs) == 0 {
		t.Fatalf("no resource for %s", o.GroupVersionKind())
	}
	return rs[0]
}

func auditKey(res matching.Resource, o *unstructured.Unstructured) string {
	name := res.Resource
	if res.Group != "" {
		name += "." + res.Group
	}
	return name + " " + o.GetNamespace() + "/" + o.GetName()
}

// addTypedPolicy creates a typed policy or binding in the cluster.
func addTypedPolicy(t *testing.T, ctx context.Context, c *Cluster, kind string, obj any) {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion("admissionregistration.k8s.io/v1")
	u.SetKind(kind)
	if _, err := c.Create(ctx, u, false); err != nil {
		t.Fatalf("creating %s %s: %v", kind, u.GetName(), err)
	}
}
