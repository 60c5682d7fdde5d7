//go:build linux

package e2e

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/cluster"
	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/manifest"
)

var update = flag.Bool("update", false, "rewrite test/e2e/testdata/differential/*.golden.yaml from kube-apiserver's results")

// adminInfo is the user the static token authenticates, as kube-apiserver
// presents it to admission.
// aloneOnly names the sets whose first comparison (mutatis admitting the
// object kube-apiserver decoded, then a dry-run create) cannot hold, and
// why: only the second (mutatis alone, from the case object) applies.
var aloneOnly = map[string]string{
	"44-service-to-external-name": "the dry-run decoded Service carries the cluster IPs and IP families its registry allocated; made an ExternalName one, the second dry run refuses them (spec.clusterIPs: Forbidden), which the object as written never carries",
}

func adminInfo() user.Info {
	return &user.DefaultInfo{Name: adminUser, UID: adminUID, Groups: []string{user.SystemPrivilegedGroup, user.AllAuthenticated}}
}

// TestDifferential runs every policy set of testdata/differential through
// a real kube-apiserver v1.37.1 (MutatingAdmissionPolicy plugin enabled)
// and through mutatis' offline engine, and requires the same outcome: the
// same stored object, or the same refusal (code, reason, message).
// kube-apiserver's outcome is also compared with the reviewed golden file.
//
// A case file is a multi-document YAML: Namespaces and ConfigMap params,
// MutatingAdmissionPolicies and bindings (admissionregistration.k8s.io/v1),
// and last the object whose CREATE is admitted. In an UPDATE set, an
// earlier document has the object's kind, namespace and name: it is
// created first, then updated to the object (oldObjectOf).
//
// Two comparisons. The first normalizes kube-apiserver's decoding and
// defaulting away with the API server itself, with the policies absent:
//
//  1. in = dry-run CREATE of the case object: the object as decoded and
//     defaulted by the API server (and its other admission plugins), which
//     is what the MAP plugin receives;
//  2. mutatis admits in → M; then N = dry-run CREATE of M, which applies
//     the defaulting and create strategy the API server applies after
//     admission;
//  3. the policies are created and made effective (barrier);
//     S = the real CREATE of the case object;
//  4. S and N are compared after dropping uid, resourceVersion,
//     creationTimestamp and managedFields.
//
// The second takes no help from the API server: mutatis decodes the case
// object as written (cluster.Decode: defaulting, the admission plugins
// before MAP; pruning and structural defaults for custom resources),
// admits it and runs the registry strategy (cluster.Admit); its stored
// object (Admission.Stored) or refusal (the denial, the 422 of validation)
// must be S or kube-apiserver's refusal, message for message.
func TestDifferential(t *testing.T) {
	cases := caseFiles(t)
	c := StartCluster(t, NativeMAP)
	// Bounds every API call of the scenario (go test -timeout is the last
	// resort and skips cleanups).
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	b := &barrier{c: c}
	b.sync(t, ctx)
	for _, f := range cases {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		t.Run(name, func(t *testing.T) { runDifferentialCase(t, ctx, c, b, f) })
	}
	t.Run("crd-in-a-built-in-group", func(t *testing.T) { runUnreachableCRD(t, ctx, c) })
}

func runDifferentialCase(t *testing.T, ctx context.Context, c *Cluster, b *barrier, file string) {
	docs, data, err := readDocs(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) < 2 {
		t.Fatalf("%s: want policies, bindings and the object last", file)
	}
	object := docs[len(docs)-1]
	var resources, policies, bindings []*unstructured.Unstructured
	for _, d := range docs[:len(docs)-1] {
		switch {
		case isPolicy(d):
			policies = append(policies, d)
		case isBinding(d):
			bindings = append(bindings, d)
		default:
			resources = append(resources, d)
		}
	}
	if len(policies) == 0 || len(bindings) == 0 {
		t.Fatalf("%s: no policy or binding", file)
	}

	// mutatis reads the same file as a user's manifests.
	set, err := manifest.Parse(file, data)
	if err != nil {
		t.Fatalf("mutatis cannot load %s: %v", file, err)
	}
	if len(set.Rejected) > 0 || len(set.Policies) != len(policies) || len(set.Bindings) != len(bindings) || len(set.Objects) != len(resources)+1 {
		t.Fatalf("mutatis loaded %d policies (%d rejected), %d bindings, %d objects from %s", len(set.Policies), len(set.Rejected), len(set.Bindings), len(set.Objects), file)
	}

	redefined := createResources(t, ctx, c, resources)
	// An UPDATE set: the stored object it updates.
	var stored *unstructured.Unstructured
	if old := oldObjectOf(docs); old != nil {
		if redefined {
			waitRefused(t, ctx, c, old)
		}
		ri, err := c.resourceFor(old)
		if err != nil {
			t.Fatal(err)
		}
		if stored, err = ri.Get(ctx, old.GetName(), metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// 1. The object as the MAP plugin receives it.
	d0, err := c.write(ctx, object, stored, true)
	if err != nil {
		t.Fatalf("dry-run write of %s without policies: %v", kindKey(object), err)
	}
	in := normalize(d0.Object)

	// 2. mutatis, then the API server's post-admission defaulting; or
	// mutatis refuses a policy as kube-apiserver would on create.
	got, refused := refusedByMutatis(t, set)
	if !refused {
		got = admitByMutatis(t, ctx, c, set, in, stored)
	}
	// And the stronger one: mutatis alone, from the case object as written
	// (and the stored object an UPDATE updates).
	raw, _ := admitRawByMutatis(t, set, stored)

	// 3. The policies, natively.
	t.Cleanup(func() {
		for _, bd := range bindings {
			if err := c.Delete(ctx, bd); err != nil {
				t.Errorf("deleting %s: %v", kindKey(bd), err)
			}
		}
		for _, p := range policies {
			if err := c.Delete(ctx, p); err != nil {
				t.Errorf("deleting %s: %v", kindKey(p), err)
			}
		}
		b.sync(t, ctx)
	})
	var want outcome
	for _, o := range append(append([]*unstructured.Unstructured{}, policies...), bindings...) {
		_, err := c.Create(ctx, o, false)
		if err != nil && isPolicy(o) && apierrors.IsInvalid(err) {
			// kube-apiserver refuses the policy: that is the outcome.
			if want, err = outcomeOf(nil, err); err != nil {
				t.Fatal(err)
			}
			want.Refused = kindKey(o)
			break
		}
		if err != nil {
			t.Fatalf("creating %s: %v", kindKey(o), err)
		}
	}
	if want.Refused == "" {
		b.sync(t, ctx)
		waitTypeConverter(t, ctx, c, object, stored)
		s, err := c.write(ctx, object, stored, false)
		if want, err = outcomeOf(s, err); err != nil {
			t.Fatalf("create of %s: %v", kindKey(object), err)
		}
	}

	// kube-apiserver against the reviewed golden file.
	golden := strings.TrimSuffix(file, ".yaml") + ".golden.yaml"
	header := "# kube-apiserver v1.37.1's outcome for " + filepath.Base(file) + " (object normalized as in\n" +
		"# docs/e2e.md). Regenerate: MUTATIS_E2E=1 go test ./test/e2e -run TestDifferential -update\n"
	if *update {
		if err := os.WriteFile(golden, []byte(header+want.yaml()), 0o644); err != nil {
			t.Fatal(err)
		}
	} else {
		if d := diff("golden", readGolden(t, file), "kube-apiserver", want); d != "" {
			t.Errorf("kube-apiserver's outcome differs from %s (a behaviour change of the API server, or a stale golden file):\n%s", golden, d)
		}
	}

	// 4. mutatis against kube-apiserver.
	if reason, ok := aloneOnly[strings.TrimSuffix(filepath.Base(file), ".yaml")]; ok {
		t.Logf("first comparison skipped: %s", reason)
	} else if d := diff("kube-apiserver", want, "mutatis", got); d != "" {
		t.Errorf("mutatis (admitting kube-apiserver's decoded object, then a dry-run create) differs from kube-apiserver on %s:\n%s", filepath.Base(file), d)
	}
	if d := diff("kube-apiserver", want, "mutatis", raw); d != "" {
		t.Errorf("mutatis (from the case object: DecodeSteps, Admit, the stored object) differs from kube-apiserver on %s:\n%s", filepath.Base(file), d)
	}
	if want.Object != nil && diff("", outcome{Object: in}, "", want) == "" {
		t.Logf("note: the policies left %s unchanged", kindKey(object))
	}
}

// refusedByMutatis returns the refusal of the first policy of set that
// kube-apiserver's create-time validation refuses, as mutatis computes it
// (compiler.Validate, as every mutatis tool does), or false.
func refusedByMutatis(t *testing.T, set *manifest.Set) (outcome, bool) {
	t.Helper()
	comp, err := compiler.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range set.Policies {
		errs, err := comp.Validate(p.Policy)
		if err != nil {
			t.Fatalf("mutatis: %v", err)
		}
		if len(errs) > 0 {
			gk := admissionregistrationv1.SchemeGroupVersion.WithKind("MutatingAdmissionPolicy").GroupKind()
			o, err := outcomeOf(nil, apierrors.NewInvalid(gk, p.Policy.Name, errs))
			if err != nil {
				t.Fatal(err)
			}
			o.Refused = "MutatingAdmissionPolicy " + p.Policy.Name
			return o, true
		}
	}
	return outcome{}, false
}

// admitByMutatis admits in (the object as the MAP plugin receives it) with
// mutatis' offline engine and returns the outcome after the API server's
// post-admission defaulting (a dry-run create of the result).
func admitByMutatis(t *testing.T, ctx context.Context, c *Cluster, set *manifest.Set, in map[string]any, stored *unstructured.Unstructured) outcome {
	t.Helper()
	sim, ev := simulate(t, set)
	req := cluster.Request{Object: &unstructured.Unstructured{Object: in}, User: adminInfo()}
	if stored != nil {
		req.OldObject = stored.DeepCopy()
	}
	attrs, err := sim.Attributes(req)
	if err != nil {
		t.Fatalf("mutatis: %v", err)
	}
	res, err := new(chain.Runner).Run(ctx, attrs, ev)
	if err != nil {
		t.Fatalf("mutatis: %v", err)
	}
	if res.Denied != nil {
		return outcomeOfStatus(res.Denied)
	}
	n, err := c.write(ctx, &unstructured.Unstructured{Object: res.Object}, stored, true)
	got, err := outcomeOf(n, err)
	if err != nil {
		t.Fatalf("dry-run write of mutatis' result: %v", err)
	}
	return got
}
