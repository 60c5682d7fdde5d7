//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/mutatis-dev/mutatis/manifest"
	"github.com/mutatis-dev/mutatis/scheme/admissionplugins"
)

// TestBuiltinPlugins creates Pods, PVCs, Ingresses, Nodes and a
// PersistentVolume with no policy at all through a kube-apiserver that
// runs its default admission plugins, ServiceAccount included
// (DefaultAdmission), and requires the stored object, or the refusal, that
// mutatis computes offline from the same objects with kube-apiserver's
// default set (cluster.New, DecodeSteps, Admit: what `mutatis apply` runs):
// every plugin before the policies, fed from the case's objects.
//
// A case file of testdata/plugins holds the objects of the cluster
// (Namespaces, ServiceAccounts, LimitRanges, PriorityClasses,
// StorageClasses, IngressClasses, RuntimeClasses, Nodes), then the object
// created. The test also creates each namespace's "default"
// ServiceAccount, as kube-controller-manager would (offline, mutatis
// supplies it). The ServiceAccount plugin names the token volume
// kube-api-access- and 5 random characters; the real name is read as
// mutatis' fixed one (admissionplugins.TokenVolumeSuffix). The plugins read their
// objects from informers: the object is dry-run created until the answer
// is mutatis' (or 60 s pass), then created. Cluster-scoped objects are
// deleted after each case: the next case's cluster has only its own.
func TestBuiltinPlugins(t *testing.T) {
	files, err := filepath.Glob("testdata/plugins/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	sort.Strings(files)
	c := StartCluster(t, DefaultAdmission)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".yaml")
		t.Run(name, func(t *testing.T) {
			set, err := manifest.Load(ctx, []string{file}, nil)
			if err != nil {
				t.Fatal(err)
			}
			objects := set.Objects
			object := objects[len(objects)-1].Object
			want := builtinMutatis(t, set)

			defer deleteClusterScoped(t, c, objects)
			for _, o := range objects[:len(objects)-1] {
				if _, err := c.Create(ctx, o.Object, false); err != nil {
					t.Fatalf("creating %s: %v", kindKey(o.Object), err)
				}
			}
			if ns := object.GetNamespace(); ns != "" {
				sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns}}
				if _, err := c.Client.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
					t.Fatal(err)
				}
			}
			deadline := time.Now().Add(60 * time.Second)
			err = poll(ctx, 250*time.Millisecond, func(ctx context.Context) (bool, error) {
				u, err := c.Create(ctx, object, true)
				return time.Now().After(deadline) || diff("mutatis", want, "kube-apiserver", builtinOutcome(t, u, err)) == "", nil
			})
			if err != nil {
				t.Fatal(err)
			}
			u, err := c.Create(ctx, object, false)
			got := builtinOutcome(t, u, err)
			if d := diff("mutatis", want, "kube-apiserver", got); d != "" {
				t.Errorf("the stored object differs:\n%s", d)
			}
			checkBuiltinGolden(t, file, "kube-apiserver", got)
		})
	}
}

// generatedTokenVolume is the name kube-apiserver's ServiceAccount plugin
// gives the token volume (names.SimpleNameGenerator's alphabet).
var generatedTokenVolume = regexp.MustCompile(`"kube-api-access-[bcdfghjklmnpqrstvwxz2456789]{5}"`)

// builtinMutatis is mutatis' outcome of a case: the stored object, or
// the refusal, with kube-apiserver's default admission plugins.
func builtinMutatis(t *testing.T, set *manifest.Set) outcome {
	t.Helper()
	o, _ := admitRawWith(t, set, nil, nil, admissionplugins.Flags{})
	return withoutTimes(o)
}

// withoutTimes drops the time a PersistentVolume's strategy stamps
// (status.lastPhaseTransitionTime: now).
func withoutTimes(o outcome) outcome {
	if status, ok := o.Object["status"].(map[string]any); ok {
		delete(status, "lastPhaseTransitionTime")
	}
	return o
}

// builtinOutcome is the outcome of a create, the token volume's random
// suffix read as mutatis' fixed one, without times (withoutTimes).
func builtinOutcome(t *testing.T, u *unstructured.Unstructured, err error) outcome {
	t.Helper()
	o, err := outcomeOf(u, err)
	if err != nil {
		t.Fatal(err)
	}
	if o.Object == nil {
		return o
	}
	o = withoutTimes(o)
	b, err := json.Marshal(o.Object)
	if err != nil {
		t.Fatal(err)
	}
	b = generatedTokenVolume.ReplaceAll(b, []byte(`"kube-api-access-`+admissionplugins.TokenVolumeSuffix+`"`))
	o.Object = nil
	if err := json.Unmarshal(b, &o.Object); err != nil {
		t.Fatal(err)
	}
	return o
}

// deleteClusterScoped deletes the cluster-scoped objects of a case.
func deleteClusterScoped(t *testing.T, c *Cluster, objects []manifest.Object) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, o := range objects {
		if o.Object.GetNamespace() != "" || o.Object.GetKind() == "Namespace" {
			continue
		}
		if err := c.Delete(ctx, o.Object); err != nil {
			t.Errorf("deleting %s: %v", kindKey(o.Object), err)
		}
	}
}

// TestBuiltinPluginsCasesAreValid runs in `make test` too: every case of
// TestBuiltinPlugins loads, has no policy, and mutatis' offline outcome is
// the reviewed golden one (testdata/plugins/golden, kube-apiserver's
// outcome once TestBuiltinPlugins ran).
func TestBuiltinPluginsCasesAreValid(t *testing.T) {
	files, err := filepath.Glob("testdata/plugins/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".yaml"), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			set, err := manifest.Parse(file, data)
			if err != nil {
				t.Fatal(err)
			}
			if len(set.Policies)+len(set.Bindings) > 0 {
				t.Fatal("a case of the built-in plugins has no policy")
			}
			checkBuiltinGolden(t, file, "mutatis", builtinMutatis(t, set))
		})
	}
}

// builtinGolden is the golden file of a case of testdata/plugins: the
// reviewed outcome, kube-apiserver's (TestBuiltinPlugins compares both
// sides with it).
func builtinGolden(file string) string {
	return filepath.Join(filepath.Dir(file), "golden", filepath.Base(file))
}

// checkBuiltinGolden compares o, the outcome of side, with the golden
// file of case file (-update rewrites it from mutatis' outcome).
func checkBuiltinGolden(t *testing.T, file, side string, o outcome) {
	t.Helper()
	golden := builtinGolden(file)
	if *update && side == "mutatis" {
		if err := os.WriteFile(golden, []byte(o.yaml()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	data, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test -run TestBuiltinPluginsCasesAreValid -update writes it)", err)
	}
	var want outcome
	if err := yaml.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	if d := diff("golden", want, side, o); d != "" {
		t.Errorf("%s's outcome is not the golden one:\n%s", side, d)
	}
}
