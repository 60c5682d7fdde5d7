//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"sigs.k8s.io/yaml"

	"github.com/mutatis-dev/mutatis/cluster"
	"github.com/mutatis-dev/mutatis/manifest"
	"github.com/mutatis-dev/mutatis/matching"
	"github.com/mutatis-dev/mutatis/scheme/admissionplugins"
)

// sweepEnv selects the kind sweep's size: "all" sweeps every kind and
// subresource of sweepKinds; anything else (the default, `make e2e`, CI)
// the kinds marked subset.
const sweepEnv = "MUTATIS_E2E_SWEEP"

// sweepNS is the namespace of the sweep's namespaced objects.
const sweepNS = "sweep"

// caseLabel selects, by the object's labels, the one sweep policy that
// applies to a CREATE.
const caseLabel = "sweep.mutatis.dev/case"

// sweepCase is one request of the sweep: one object, one policy that
// changes one field of it.
type sweepCase struct {
	id   string // label value, policy and binding name suffix
	kind *sweepKind
	sub  *sweepSub // nil: a CREATE of the kind's object
	pert sweepPert
}

// policy returns the MutatingAdmissionPolicy and its binding of c, as
// YAML documents.
func (c sweepCase) policy() string {
	gvr := c.kind.gvr
	res := gvr.Resource
	selector := fmt.Sprintf("objectSelector: {matchLabels: {%s: %q}}", caseLabel, c.id)
	ops := "[CREATE]"
	names := ""
	bindingMatch := "  matchResources:\n    " + selector + "\n"
	if c.sub != nil {
		if c.sub.name != "" {
			res += "/" + c.sub.name
		}
		ops = "[UPDATE]"
		// A subresource's object (a Scale) does not carry the parent's
		// labels: the parent is named instead.
		names = fmt.Sprintf(", resourceNames: [%q]", c.parentName())
		bindingMatch = ""
	}
	var mutation string
	if c.pert.patch == "JSONPatch" {
		mutation = fmt.Sprintf("  - patchType: JSONPatch\n    jsonPatch:\n      expression: %q\n", c.pert.expr)
	} else {
		mutation = fmt.Sprintf("  - patchType: ApplyConfiguration\n    applyConfiguration:\n      expression: %q\n", c.pert.expr)
	}
	return fmt.Sprintf(`apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: sweep-%[1]s}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [%[2]q], apiVersions: [%[3]q], operations: %[4]s, resources: [%[5]q]%[6]s}
  failurePolicy: Fail
  reinvocationPolicy: Never
  mutations:
%[7]s---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: sweep-%[1]s}
spec:
  policyName: sweep-%[1]s
%[8]s`, c.id, gvr.Group, gvr.Version, ops, res, names, mutation, bindingMatch)
}

// parentName is the name of a subresource case's parent object: each case
// has its own (a policy selects it by name).
func (c sweepCase) parentName() string {
	if c.sub != nil && c.sub.parentName != "" {
		return c.sub.parentName
	}
	return c.id
}

// object returns c's object: the kind's sample with the case's label (a
// CREATE), or the parent it updates (a subresource).
func (c sweepCase) object(t *testing.T, namespaced bool) *unstructured.Unstructured {
	t.Helper()
	src := c.kind.object
	if c.sub != nil && c.sub.name == "" && c.kind.updateParent != "" {
		src = c.kind.updateParent
	}
	if c.sub != nil && c.sub.parent != "" {
		src = c.sub.parent
	}
	u := mustSweepObject(t, src)
	if namespaced {
		u.SetNamespace(sweepNS)
	}
	labels := u.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[caseLabel] = c.id
	u.SetLabels(labels)
	if c.sub != nil && !c.kind.fixedName {
		u.SetName(c.parentName())
	}
	return u
}

func mustSweepObject(t *testing.T, s string) *unstructured.Unstructured {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("sweep object %s: %v", s, err)
	}
	return &unstructured.Unstructured{Object: m}
}

// sweepCases lists the cases of kinds: for a kind, the generic
// perturbations of its metadata and its own; for each of its
// subresources, theirs.
func sweepCases(kinds []*sweepKind, all bool) []sweepCase {
	var out []sweepCase
	for _, k := range kinds {
		if !all && !k.subset {
			continue
		}
		if !k.noCreate {
			perts := append(slices.Clone(genericPerts), k.perts...)
			for _, p := range perts {
				out = append(out, sweepCase{id: k.id + "-" + p.name, kind: k, pert: p})
			}
			// The same changes on an UPDATE of a stored object (the
			// resource itself: a sweepSub without a name).
			if !k.noUpdate {
				u := &sweepSub{perts: perts}
				for _, p := range perts {
					out = append(out, sweepCase{id: k.id + "-u-" + p.name, kind: k, sub: u, pert: p})
				}
			}
		}
		for i := range k.subs {
			s := &k.subs[i]
			if !all && !s.subset {
				continue
			}
			for _, p := range s.perts {
				out = append(out, sweepCase{id: k.id + "-" + s.name + "-" + p.name, kind: k, sub: s, pert: p})
			}
		}
	}
	return out
}

// TestKindSweep sends, for every built-in kind kube-apiserver 1.37.1
// serves (and a custom resource), one MutatingAdmissionPolicy per kind of
// sub-structure of its object (a scalar, a map entry, a struct, an item of
// a keyed list, a set, an atomic list) through a real kube-apiserver
// (dry-run CREATE, dry-run UPDATE of a stored object; an UPDATE of its
// subresources with a strategy) and
// through mutatis (cluster.DecodeSteps, cluster.Admit: the whole chain and
// the registry), and compares the stored objects (without uid,
// resourceVersion, creationTimestamp, managedFields) or the refusals,
// message for message. A case whose difference docs/fidelity.md explains
// is listed in sweepKnown and logged; any other difference fails.
//
// By default a fixed subset runs (Pod, Deployment, Service, ConfigMap, a
// custom resource, pods/status, deployments/scale: 95 cases);
// MUTATIS_E2E_SWEEP=all runs the whole
// sweep (docs/fidelity.md, "The kind sweep"). Every run first checks that
// every resource the server's discovery lists is swept or skipped with
// its reason, and is in mutatis' resource table.
func TestKindSweep(t *testing.T) {
	all := os.Getenv(sweepEnv) == "all"
	kinds := sweepKinds()
	cases := sweepCases(kinds, all)
	ids := map[string]bool{}
	for _, sc := range cases {
		if ids[sc.id] || len(sc.id) > 63 {
			t.Fatalf("sweep case %s: a duplicate, or longer than a label value", sc.id)
		}
		ids[sc.id] = true
	}
	c := StartCluster(t, NativeMAP)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	createNamespace(t, ctx, c, sweepNS)
	base := []string{`{apiVersion: v1, kind: Namespace, metadata: {name: ` + sweepNS + `}}`}
	for _, crd := range sweepCRDs {
		u := mustSweepObject(t, crd)
		if _, err := c.Create(ctx, u, false); err != nil {
			t.Fatalf("creating %s: %v", kindKey(u), err)
		}
		waitEstablished(t, ctx, c, u)
		base = append(base, crd)
	}
	c.Mapper.Reset()
	checkSweepCoverage(t, c, kinds)

	// The parents of the subresource cases, stored before any policy.
	parents := map[string]*unstructured.Unstructured{}
	for _, sc := range cases {
		if sc.sub == nil || sc.sub.existing {
			continue
		}
		p := sc.object(t, sc.kind.namespaced)
		stored, err := c.Create(ctx, p, false)
		if err != nil {
			t.Fatalf("creating the parent of %s: %v", sc.id, err)
		}
		if sc.sub.prepare != nil {
			if stored, err = sc.sub.prepare(ctx, c, stored); err != nil {
				t.Fatalf("preparing the parent of %s: %v", sc.id, err)
			}
		}
		parents[sc.id] = stored
	}

	// Every policy at once, then the barrier. A policy kube-apiserver
	// refuses is the case's outcome.
	b := &barrier{c: c}
	refusedPolicy := map[string]outcome{}
	for _, sc := range cases {
		docs, _, err := readDocsString(sc.policy())
		if err != nil {
			t.Fatalf("%s: %v", sc.id, err)
		}
		for _, d := range docs {
			_, err := c.Create(ctx, d, false)
			if err != nil && isPolicy(d) && apierrors.IsInvalid(err) {
				o, _ := outcomeOf(nil, err)
				o.Refused = kindKey(d)
				refusedPolicy[sc.id] = o
				break
			}
			if err != nil {
				t.Fatalf("%s: creating %s: %v\n%s", sc.id, kindKey(d), err, sc.policy())
			}
		}
	}
	b.sync(t, ctx)

	known := sweepKnown()
	var agree, differ, explained []string
	for _, sc := range cases {
		t.Run(sc.id, func(t *testing.T) {
			var want, got outcome
			if o, ok := refusedPolicy[sc.id]; ok {
				want, got = o, admitSweepByMutatis(t, ctx, sc, base, cluster.Request{})
			} else {
				want, got = runSweepCase(t, ctx, c, sc, base, parents[sc.id])
			}
			d := diff("kube-apiserver", sweepNormal(want), "mutatis", sweepNormal(got))
			switch reason := knownReason(known, sc); {
			case d == "":
				agree = append(agree, sc.id)
				if _, exact := known[sc.id]; exact {
					t.Errorf("listed in sweepKnown (%s) but agrees: remove it", reason)
				}
			case reason != "":
				explained = append(explained, sc.id)
				t.Logf("known difference (%s):\n%s", reason, d)
			default:
				differ = append(differ, sc.id)
				t.Errorf("mutatis differs from kube-apiserver:\n%s\npolicy:\n%s", d, sc.policy())
			}
		})
	}
	nk := map[string]bool{}
	for _, sc := range cases {
		if sub := subName(sc); sub != "update" { // an UPDATE of the resource itself is not another resource
			nk[sc.kind.id+"/"+sub] = true
		}
	}
	t.Logf("kind sweep (%s=%q): %d resources and subresources, %d cases: %d agree, %d differ as docs/fidelity.md explains, %d differ unexplained %v",
		sweepEnv, os.Getenv(sweepEnv), len(nk), len(cases), len(agree), len(explained), len(differ), differ)
}

// uuids are the values of generated UIDs (a Job's controller-uid labels
// and selector are its uid, which the store draws at random).
var uuids = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// times are timestamps the registry takes from the wall clock (a
// PersistentVolume's status.lastPhaseTransitionTime).
var times = regexp.MustCompile(`"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"`)

// sweepNormal is o with every UUID in its object replaced by "UID", and
// every timestamp by "TIME".
func sweepNormal(o outcome) outcome {
	if o.Object == nil {
		return o
	}
	b, err := json.Marshal(o.Object)
	if err != nil {
		return o
	}
	var m map[string]any
	if err := json.Unmarshal(times.ReplaceAll(uuids.ReplaceAll(b, []byte("UID")), []byte(`"TIME"`)), &m); err != nil {
		return o
	}
	o.Object = m
	return o
}

func subName(sc sweepCase) string {
	if sc.sub == nil {
		return ""
	}
	if sc.sub.name == "" {
		return "update"
	}
	return sc.sub.name
}

func readDocsString(s string) ([]*unstructured.Unstructured, []byte, error) {
	f, err := os.CreateTemp("", "sweep-*.yaml")
	if err != nil {
		return nil, nil, err
	}
	defer os.Remove(f.Name())
	if _, err := f.WriteString(s); err != nil {
		f.Close()
		return nil, nil, err
	}
	f.Close()
	return readDocs(f.Name())
}

// runSweepCase returns kube-apiserver's outcome and mutatis'.
func runSweepCase(t *testing.T, ctx context.Context, c *Cluster, sc sweepCase, base []string, parent *unstructured.Unstructured) (want, got outcome) {
	t.Helper()
	obj := sc.object(t, sc.kind.namespaced)
	rc := c.Dynamic.Resource(sc.kind.gvr).Namespace(nsIf(sc.kind.namespaced))
	req := cluster.Request{User: adminInfo(), Object: obj}
	dry := []string{metav1.DryRunAll}
	if sc.sub != nil && sc.sub.notDryRun {
		dry = nil
	}
	var s *unstructured.Unstructured
	var err error
	if sc.sub == nil {
		perr := poll(ctx, 500*time.Millisecond, func(ctx context.Context) (bool, error) {
			s, err = rc.Create(ctx, obj.DeepCopy(), metav1.CreateOptions{DryRun: dry})
			return !(apierrors.IsServiceUnavailable(err) && strings.Contains(err.Error(), "CustomResourceDefinitions")), nil
		})
		if perr != nil {
			t.Fatalf("%v (last: %v)", perr, err)
		}
	} else {
		var old *unstructured.Unstructured
		// The object a subresource of the parent's kind carries is the
		// parent (namespaces/finalize has no GET); a Scale is read.
		var get, sub []string
		if sc.sub.name == "scale" {
			get = []string{"scale"}
		}
		if sc.sub.name != "" {
			sub = []string{sc.sub.name}
		}
		if old, err = rc.Get(ctx, sc.parentName(), metav1.GetOptions{}, get...); err != nil {
			t.Fatal(err)
		}
		next := old.DeepCopy()
		if sc.sub.change != nil {
			sc.sub.change(next.Object)
		}
		req.Object, req.OldObject, req.Operation = next, old, admission.Update
		if sc.sub.name != "" {
			req.Subresource = sc.kind.gvr.Resource + "/" + sc.sub.name
		}
		s, err = rc.Update(ctx, next.DeepCopy(), metav1.UpdateOptions{DryRun: dry}, sub...)
	}
	if err != nil && !isAPIStatus(err) {
		t.Fatalf("request: %v", err)
	}
	if want, err = outcomeOf(s, err); err != nil {
		t.Fatal(err)
	}
	got = admitSweepByMutatis(t, ctx, sc, base, req)
	return want, got
}

func nsIf(namespaced bool) string {
	if namespaced {
		return sweepNS
	}
	return ""
}

// admitSweepByMutatis admits req offline over the sweep's base objects
// with sc's policy, as `mutatis apply` does: decoding, the chain, the
// registry.
func admitSweepByMutatis(t *testing.T, ctx context.Context, sc sweepCase, base []string, req cluster.Request) outcome {
	t.Helper()
	src := strings.Join(base, "\n---\n") + "\n---\n" + sc.policy()
	set, err := manifest.Parse(sc.id+".yaml", []byte(src))
	if err != nil || len(set.Rejected) > 0 {
		t.Fatalf("mutatis cannot load the case: %v %v", err, set.Rejected)
	}
	if o, refused := refusedByMutatis(t, set); refused {
		return o
	}
	sim, err := cluster.New(set.Objects, cluster.Options{AdmissionPlugins: admissionplugins.Flags{Disable: harnessDisabledPlugins}})
	if err != nil {
		t.Fatal(err)
	}
	pols, binds := set.APIObjects()
	ev, err := sim.Evaluator(nil, pols, binds)
	if err != nil {
		t.Fatalf("mutatis: %v", err)
	}
	req.Object = req.Object.DeepCopy()
	if req.OldObject != nil {
		req.OldObject = req.OldObject.DeepCopy()
	}
	d, err := sim.DecodeSteps(req)
	if err != nil {
		if o, oerr := outcomeOf(nil, err); oerr == nil {
			return o
		}
		t.Fatalf("mutatis: %v", err)
	}
	adm, err := sim.Admit(ctx, cluster.Chain{Policies: ev}, d)
	switch {
	case err != nil:
		if o, oerr := outcomeOf(nil, err); oerr == nil {
			return o
		}
		t.Fatalf("mutatis: %v", err)
	case adm.Result.Denied != nil:
		return outcomeOfStatus(adm.Result.Denied)
	case adm.Invalid != nil:
		return outcomeOfStatus(adm.Invalid)
	case adm.Stored != nil:
		return outcome{Object: normalize(adm.Stored)}
	}
	return outcome{Object: normalize(adm.Object)}
}

// checkSweepCoverage requires every resource and subresource the server's
// discovery lists with a write verb to be swept (sweepKinds) or skipped
// with a reason (sweepSkipped), and to be in mutatis' resource table
// (matching.DefaultTable: the kinds mutatis knows offline).
func checkSweepCoverage(t *testing.T, c *Cluster, kinds []*sweepKind) {
	t.Helper()
	_, lists, err := c.Client.Discovery().ServerGroupsAndResources()
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	swept := map[string]bool{}
	for _, k := range kinds {
		gr := k.gvr.GroupResource().String()
		if !k.noCreate {
			swept[gr] = true
		}
		for _, s := range k.subs {
			swept[gr+"/"+s.name] = true
		}
	}
	skipped := sweepSkipped()
	table := matching.DefaultTable()
	var served []string
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range l.APIResources {
			if !slices.Contains(r.Verbs, "create") && !slices.Contains(r.Verbs, "update") {
				continue
			}
			res, sub, _ := strings.Cut(r.Name, "/")
			gvr := gv.WithResource(res)
			tr, ok := table.Resource(gvr)
			if gv.Group == "sweep.mutatis.dev" {
				// The sweep's own CRDs: mutatis' table has them from their
				// definitions, which the sweep gives the simulated cluster.
			} else if !ok {
				t.Errorf("%s: served by kube-apiserver, not in mutatis' resource table", gvr)
			} else if sub != "" {
				if _, ok := tr.Subresource(sub); !ok {
					t.Errorf("%s/%s: served by kube-apiserver, not in mutatis' resource table", gvr, sub)
				}
			}
			key := gvr.GroupResource().String()
			if sub != "" {
				key += "/" + sub
			}
			if !swept[key] && skipped[key] == "" {
				t.Errorf("%s (%s): served by kube-apiserver %s, neither swept nor in sweepSkipped", key, l.GroupVersion, strings.Join(r.Verbs, ","))
			}
			served = append(served, key)
		}
	}
	sort.Strings(served)
	served = slices.Compact(served)
	t.Logf("discovery: %d resources and subresources with create or update; %d swept kinds, %d skipped", len(served), len(kinds), len(skipped))
	for key := range swept {
		if !slices.Contains(served, key) {
			t.Errorf("%s is swept but not served with create or update", key)
		}
	}
}
