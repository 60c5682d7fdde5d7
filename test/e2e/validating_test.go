//go:build linux

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/mutatis-dev/mutatis/cluster"
	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/manifest"
	"github.com/mutatis-dev/mutatis/scheme/admissionplugins"
	"github.com/mutatis-dev/mutatis/validating"
)

// operationAnnotation on a validating case's object makes its request a
// DELETE of the object (created before the policies) instead of a CREATE.
// The annotation is removed before the object is used.
const operationAnnotation = "e2e.mutatis.dev/operation"

// TestValidatingStage runs every case of testdata/validating through a
// real kube-apiserver v1.37.1 (its default admission plugins but
// ServiceAccount: PodSecurity, LimitRanger, the MutatingAdmissionPolicy and
// ValidatingAdmissionPolicy plugins …) and through mutatis (cluster.Admit:
// the mutating chain, the registry, then the validating stage), and
// requires the same outcome: the stored object or the refusal (code,
// reason, message), the warnings kube-apiserver returned, and the audit
// annotations of the request (read from kube-apiserver's audit log; the
// authorization and latency annotations, which are not admission's, left
// out).
//
// A case file holds Namespaces, params, MutatingAdmissionPolicies,
// ValidatingAdmissionPolicies and their bindings, then the object. With
// the annotation e2e.mutatis.dev/operation: DELETE the object is created
// before the policies and the request is its DELETE.
//
// The policies take effect in kube-apiserver a moment after they are
// created: the request is dry-run until its outcome is mutatis' (or 60 s
// pass), then run for real, and that outcome is compared.
func TestValidatingStage(t *testing.T) {
	files, err := filepath.Glob("testdata/validating/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	sort.Strings(files)
	c := StartCluster(t, NativeMAP)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	warnings := &warningRecorder{}
	cfg := rest.CopyConfig(c.Config)
	cfg.WarningHandler = warnings
	cfg.WrapTransport = warnings.wrap
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".yaml")
		t.Run(name, func(t *testing.T) { runValidatingCase(t, ctx, c, dyn, warnings, file) })
	}
}

// validatingOutcome is an outcome with the request's warnings and audit
// annotations.
type validatingOutcome struct {
	outcome
	Warnings         []string          `json:"warnings,omitempty"`
	AuditAnnotations map[string]string `json:"auditAnnotations,omitempty"`
}

func (o validatingOutcome) yaml() string {
	b, err := yaml.Marshal(o)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

func runValidatingCase(t *testing.T, ctx context.Context, c *Cluster, dyn dynamic.Interface, warnings *warningRecorder, file string) {
	docs, data, err := readDocs(file)
	if err != nil {
		t.Fatal(err)
	}
	object := docs[len(docs)-1]
	op := admission.Create
	if a := object.GetAnnotations(); a[operationAnnotation] != "" {
		op = admission.Operation(a[operationAnnotation])
		delete(a, operationAnnotation)
		object.SetAnnotations(a)
	}
	var resources, policies []*unstructured.Unstructured
	for _, d := range docs[:len(docs)-1] {
		if d.GroupVersionKind().Group == "admissionregistration.k8s.io" {
			policies = append(policies, d)
		} else {
			resources = append(resources, d)
		}
	}
	set, err := manifest.Parse(file, data)
	if err != nil {
		t.Fatalf("mutatis cannot load %s: %v", file, err)
	}
	if len(set.Rejected) > 0 {
		t.Fatalf("mutatis rejected objects of %s: %v", file, set.Rejected)
	}

	defer deleteAll(t, c, append(append([]*unstructured.Unstructured{}, policies...), resources...))
	createResources(t, ctx, c, resources)
	ri, err := resourceOn(c, dyn, object)
	if err != nil {
		t.Fatal(err)
	}
	var stored *unstructured.Unstructured
	if op == admission.Delete {
		if stored, err = ri.Create(ctx, object.DeepCopy(), metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating %s: %v", kindKey(object), err)
		}
		defer c.Delete(ctx, object)
	}
	for _, p := range policies {
		if _, err := c.Create(ctx, p, false); err != nil {
			t.Fatalf("creating %s: %v", kindKey(p), err)
		}
	}
	want := validatingMutatis(t, set, object, stored, op)

	// request runs the case's request; its outcome has the request's audit
	// annotations.
	request := func(dryRun bool) validatingOutcome {
		warnings.reset()
		var u *unstructured.Unstructured
		var err error
		if op == admission.Delete {
			err = ri.Delete(ctx, object.GetName(), metav1.DeleteOptions{DryRun: dryRunAll(dryRun)})
		} else {
			u, err = ri.Create(ctx, object.DeepCopy(), metav1.CreateOptions{DryRun: dryRunAll(dryRun)})
		}
		out := validatingOutcome{Warnings: warnings.list()}
		if op != admission.Delete || err != nil {
			// An admitted DELETE: what was deleted is not compared.
			o, oerr := outcomeOf(u, err)
			if oerr != nil {
				t.Fatalf("%s %s: %v", op, kindKey(object), oerr)
			}
			out.outcome = o
		}
		out.AuditAnnotations = auditAnnotationsOf(t, c, warnings.auditID())
		return out
	}
	deadline := time.Now().Add(60 * time.Second)
	_ = poll(ctx, 250*time.Millisecond, func(ctx context.Context) (bool, error) {
		return time.Now().After(deadline) || request(true).yaml() == want.yaml(), nil
	})
	got := request(false)
	if op != admission.Delete && got.Error == nil {
		defer c.Delete(ctx, object)
	}
	if got.yaml() != want.yaml() {
		t.Errorf("kube-apiserver:\n%s\nmutatis:\n%s", got.yaml(), want.yaml())
	}
	checkValidatingGolden(t, file, "kube-apiserver", got)
}

// TestValidatingCasesAreValid runs in `make test` too: every case of
// TestValidatingStage loads, and mutatis' offline outcome is the reviewed
// golden one (testdata/validating/golden: kube-apiserver's outcome, written
// by TestValidatingStage -update). A DELETE's old object is the case
// object as written (in kube-apiserver, as it was stored).
func TestValidatingCasesAreValid(t *testing.T) {
	files, err := filepath.Glob("testdata/validating/*.yaml")
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
			object := set.Objects[len(set.Objects)-1].Object.DeepCopy()
			op := admission.Create
			if a := object.GetAnnotations(); a[operationAnnotation] != "" {
				op = admission.Operation(a[operationAnnotation])
				delete(a, operationAnnotation)
				object.SetAnnotations(a)
			}
			checkValidatingGolden(t, file, "mutatis", validatingMutatis(t, set, object, object, op))
		})
	}
}

// checkValidatingGolden compares o, the outcome of side, with the golden
// file of case file; TestValidatingStage -update rewrites it from
// kube-apiserver's outcome.
func checkValidatingGolden(t *testing.T, file, side string, o validatingOutcome) {
	t.Helper()
	golden := filepath.Join(filepath.Dir(file), "golden", filepath.Base(file))
	if *update {
		if side == "kube-apiserver" {
			if err := os.WriteFile(golden, []byte(o.yaml()), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	data, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (TestValidatingStage -update writes it)", err)
	}
	if string(data) != o.yaml() {
		t.Errorf("%s's outcome differs from %s:\n--- golden\n%s\n--- %s\n%s", side, golden, data, side, o.yaml())
	}
}

// validatingMutatis is mutatis' outcome of a case, as `mutatis apply`
// computes it: the whole chain with the case's MAPs and VAPs.
func validatingMutatis(t *testing.T, set *manifest.Set, object, stored *unstructured.Unstructured, op admission.Operation) validatingOutcome {
	t.Helper()
	sim, err := cluster.New(set.Objects[:len(set.Objects)-1], cluster.Options{AdmissionPlugins: admissionplugins.Flags{Disable: harnessDisabledPlugins}})
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
	vps, vbs := set.ValidatingAPIObjects()
	vev, err := sim.ValidatingPolicies(validating.NewCompiler(), vps, vbs)
	if err != nil {
		t.Fatal(err)
	}
	req := cluster.Request{Object: object.DeepCopy(), User: adminInfo(), Operation: op}
	if op == admission.Delete {
		req.Object, req.OldObject = nil, stored.DeepCopy()
	}
	d, err := sim.DecodeSteps(req)
	if err != nil {
		o, oerr := outcomeOf(nil, err)
		if oerr != nil {
			t.Fatalf("mutatis: %v", err)
		}
		return validatingOutcome{outcome: o}
	}
	adm, err := sim.Admit(context.Background(), cluster.Chain{Policies: ev, ValidatingPolicies: vev}, d)
	if err != nil {
		t.Fatalf("mutatis: %v", err)
	}
	out := validatingOutcome{}
	out.Warnings = append(append(append(append(out.Warnings, d.Warnings...), adm.Result.Warnings...), adm.Warnings...), adm.Validation.Warnings...)
	out.AuditAnnotations = admissionAnnotations(adm.Result.AuditAnnotations, adm.Validation.AuditAnnotations)
	switch status, _ := adm.Refusal(); {
	case status != nil:
		out.outcome = outcomeOfStatus(status)
	case op == admission.Delete:
	case adm.Stored != nil:
		out.outcome = outcome{Object: normalize(adm.Stored)}
	default:
		out.outcome = outcome{Object: normalize(adm.Object)}
	}
	return out
}

// admissionAnnotations merges audit annotations, leaving out those that
// are not admission's (authorization's, latency's); nil when none.
func admissionAnnotations(maps ...map[string]string) map[string]string {
	var out map[string]string
	for _, m := range maps {
		for k, v := range m {
			if strings.HasPrefix(k, "authorization.k8s.io/") || strings.HasPrefix(k, "apiserver.latency.k8s.io/") {
				continue
			}
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

// auditAnnotationsOf reads kube-apiserver's audit log for the request
// auditID (its response's Audit-Id header) and returns its admission audit
// annotations; it waits up to 10 s for the event to be written.
func auditAnnotationsOf(t *testing.T, c *Cluster, auditID string) map[string]string {
	t.Helper()
	if auditID == "" {
		t.Fatal("the response had no Audit-Id header")
	}
	var found map[string]string
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := poll(ctx, 50*time.Millisecond, func(context.Context) (bool, error) {
		f, err := os.Open(c.AuditLog)
		if err != nil {
			return false, nil
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			if !strings.Contains(sc.Text(), auditID) {
				continue
			}
			var ev struct {
				AuditID     string            `json:"auditID"`
				Stage       string            `json:"stage"`
				Annotations map[string]string `json:"annotations"`
			}
			if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.AuditID == auditID && ev.Stage == "ResponseComplete" {
				found = admissionAnnotations(ev.Annotations)
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no audit event for request %s in %s: %v", auditID, c.AuditLog, err)
	}
	return found
}

// resourceOn is c.resourceFor on the dynamic client dyn.
func resourceOn(c *Cluster, dyn dynamic.Interface, u *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	gvk := u.GroupVersionKind()
	m, err := c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, err
	}
	if m.Scope.Name() == "namespace" {
		return dyn.Resource(m.Resource).Namespace(u.GetNamespace()), nil
	}
	return dyn.Resource(m.Resource), nil
}

// deleteAll deletes objects, last first, and fails the test on errors.
func deleteAll(t *testing.T, c *Cluster, objects []*unstructured.Unstructured) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := len(objects) - 1; i >= 0; i-- {
		if objects[i].GetKind() == "Namespace" {
			// Namespaces are not deleted: their finalization needs
			// kube-controller-manager; cases use their own names.
			continue
		}
		if err := c.Delete(ctx, objects[i]); err != nil {
			t.Errorf("deleting %s: %v", kindKey(objects[i]), err)
		}
	}
}

// warningRecorder keeps the warnings of the responses since reset, and
// the Audit-Id of the last response (wrap).
type warningRecorder struct {
	mu       sync.Mutex
	warnings []string
	lastID   string
}

// wrap is a rest.Config's WrapTransport that records each response's
// Audit-Id header.
func (w *warningRecorder) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if resp != nil {
			w.mu.Lock()
			w.lastID = resp.Header.Get("Audit-Id")
			w.mu.Unlock()
		}
		return resp, err
	})
}

func (w *warningRecorder) auditID() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lastID
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// HandleWarningHeader is rest.WarningHandler's.
func (w *warningRecorder) HandleWarningHeader(code int, agent, text string) {
	if code != 299 || text == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.warnings = append(w.warnings, text)
}

func (w *warningRecorder) reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.warnings, w.lastID = nil, ""
}

func (w *warningRecorder) list() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.warnings...)
}
