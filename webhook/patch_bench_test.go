package webhook

import (
	"context"
	"encoding/json"
	"reflect"
	"sync"
	"testing"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/internal/jsonvalue"
	"github.com/mutatis-dev/mutatis/internal/valuetest"
	"github.com/mutatis-dev/mutatis/jsonpatch"

	gomodulesjsonpatch "gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/mutatis-dev/mutatis/cluster"
	"github.com/mutatis-dev/mutatis/manifest"
	"github.com/mutatis-dev/mutatis/scheme/admissionplugins"
	"github.com/mutatis-dev/mutatis/source"
)

// loadPod is the request of the load test (test/load): the Pod of
// test/load/testdata/pod.yaml as kube-apiserver sends it, mutated by the 20
// policies of test/load/testdata/policies.
type loadPod struct {
	req *admissionv1.AdmissionRequest
	// original is the Handler's decoding of the request object, which the
	// engine read.
	original map[string]any
	res      chain.Result
}

var (
	loadPodOnce sync.Once
	loadPodVal  *loadPod
	loadPodErr  error
)

func newLoadPod(tb testing.TB) *loadPod {
	tb.Helper()
	loadPodOnce.Do(func() { loadPodVal, loadPodErr = makeLoadPod() })
	if loadPodErr != nil {
		tb.Fatal(loadPodErr)
	}
	return loadPodVal
}

func makeLoadPod() (*loadPod, error) {
	ctx := context.Background()
	st, err := source.Load(ctx, source.Options{Policies: []string{"../test/load/testdata/policies"}})
	if err != nil {
		return nil, err
	}
	// As test/load's NewReviews builds the request.
	set, err := manifest.Load(ctx, []string{"../test/load/testdata/pod.yaml"}, nil)
	if err != nil {
		return nil, err
	}
	sim, err := cluster.New(nil, cluster.Options{AdmissionPlugins: admissionplugins.Flags{Disable: []string{"ServiceAccount"}}})
	if err != nil {
		return nil, err
	}
	attrs, err := sim.Attributes(cluster.Request{
		Object:  set.Objects[0].Object.DeepCopy(),
		User:    &user.DefaultInfo{Name: "system:serviceaccount:kube-system:replicaset-controller", Groups: []string{"system:serviceaccounts", user.AllAuthenticated}},
		Options: &unstructured.Unstructured{Object: map[string]any{"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"}},
	})
	if err != nil {
		return nil, err
	}
	normalized, err := sim.Patcher().Normalize(attrs.Object.Object, attrs.Kind)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(normalized)
	if err != nil {
		return nil, err
	}
	req := attrs.AdmissionRequest(attrs.Resource, attrs.Kind)
	req.UID = "load"
	req.Object = runtime.RawExtension{Raw: raw}

	a, original, err := attributes(req, nil)
	if err != nil {
		return nil, err
	}
	res, err := st.Engine().Admit(ctx, a)
	if err != nil {
		return nil, err
	}
	return &loadPod{req: req, original: original, res: res}, nil
}

// TestLoadPodPatch checks the fixture of BenchmarkPatch: the engine leaves
// the decoded request object alone (the Handler diffs it), all 20 policies
// apply, and the native patch gives the engine's object under
// evanphx/json-patch v4.
func TestLoadPodPatch(t *testing.T) {
	p := newLoadPod(t)
	if p.original == nil {
		t.Fatal("the request object was not kept")
	}
	if p.res.Denied != nil {
		t.Fatal(p.res.Denied)
	}
	var fresh map[string]any
	if err := json.Unmarshal(p.req.Object.Raw, &fresh); err != nil {
		t.Fatal(err)
	}
	if got, want := normalizeJSON(t, p.original), normalizeJSON(t, fresh); !reflect.DeepEqual(got, want) {
		t.Fatal("the engine modified the request object it was given")
	}
	resp, err := respond(p.req, p.original, false, p.res, nil, RespondOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(resp.AuditAnnotations[AnnotationPolicies]); n == 0 {
		t.Fatal("no policy applied")
	}
	// The native patch: jsonpatch.Diff of the decoded objects, encoded as
	// CreatePatch's fast path encodes it (TestOpsEncodeAsJSONMarshal).
	diff := jsonpatch.Diff(p.original, p.res.Object)
	if len(diff) == 0 {
		t.Fatal("no native patch")
	}
	var native []map[string]any
	for _, op := range diff {
		m := map[string]any{"op": op.Op, "path": op.Path}
		if op.From != "" {
			m["from"] = op.From
		}
		if op.HasValue {
			m["value"] = op.Value
		}
		native = append(native, m)
	}
	ops, err := jsonvalue.Marshal(native)
	if err != nil {
		t.Fatal(err)
	}
	if string(ops) != string(resp.Patch) {
		t.Errorf("Respond's patch\n%s\nis not the native one\n%s", resp.Patch, ops)
	}
	valuetest.CheckPatch(t, p.req.Object.Raw, resp.Patch, p.res.Object)
	// Diffed from a fresh decoding (nothing shared), the patch is the same.
	again, err := jsonpatch.CreatePatch(p.req.Object.Raw, nil, p.res.Object)
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != string(resp.Patch) {
		t.Errorf("Patch from the JSON\n%s\ndiffers from Respond's\n%s", again, resp.Patch)
	}
	old, err := documentPatch(p.req.Object.Raw, p.res.Object)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("native patch: %d operations, %d bytes; gomodules.xyz/jsonpatch: %d bytes", countOps(t, resp.Patch), len(resp.Patch), len(old))
}

// documentPatch is the JSON-document diff of gomodules.xyz/jsonpatch from
// original to want, the patch CreatePatch falls back on, without its check.
func documentPatch(original []byte, want map[string]any) ([]byte, error) {
	wantJSON, err := jsonvalue.Marshal(want)
	if err != nil {
		return nil, err
	}
	ops, err := gomodulesjsonpatch.CreatePatch(original, wantJSON)
	if err != nil {
		return nil, err
	}
	return jsonvalue.Marshal(ops)
}

func countOps(t *testing.T, patch []byte) int {
	t.Helper()
	var ops []map[string]any
	if err := json.Unmarshal(patch, &ops); err != nil {
		t.Fatal(err)
	}
	return len(ops)
}

// BenchmarkPatch compares the patch of the load request's Pod by the
// document diff (gomodules.xyz/jsonpatch and the evanphx check, the former
// path), the native diff from a fresh decoding (Patch), and the native diff
// from the Handler's decoding (Respond in the webhook).
func BenchmarkPatch(b *testing.B) {
	p := newLoadPod(b)
	raw, want := p.req.Object.Raw, p.res.Object
	b.Run("document", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := documentPatch(raw, want); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("native-decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := jsonpatch.CreatePatch(raw, nil, want); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("native-shared", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := jsonpatch.CreatePatch(raw, p.original, want); err != nil {
				b.Fatal(err)
			}
		}
	})
	// respond as the Reviewer calls it: normalized when the envelope's
	// decoder vouches for the object (it does for the load Pod), the
	// patch's check then without normalizing the request's object.
	for _, normalized := range []bool{false, true} {
		if normalized && !jsonpatch.IsNormalized(p.original) {
			b.Fatal("the load Pod is not normalized")
		}
		name := "respond"
		if normalized {
			name = "respond-normalized"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			defer reportCPU(b)()
			for b.Loop() {
				if _, err := respond(p.req, p.original, normalized, p.res, nil, RespondOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// normalizeJSON is v written as JSON and decoded again (integral numbers
// int64, others float64).
func normalizeJSON(t *testing.T, v any) any {
	t.Helper()
	return decodeJSON(t, mustJSON(t, v))
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := jsonvalue.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
