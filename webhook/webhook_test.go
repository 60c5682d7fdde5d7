package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	evanphxjsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	admissionv1beta1 "k8s.io/api/admission/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/admission"
	webhookrequest "k8s.io/apiserver/pkg/admission/plugin/webhook/request"
	sigsjson "sigs.k8s.io/json"

	"github.com/mutatis-dev/mutatis/engine"
	"github.com/mutatis-dev/mutatis/matching"
)

const (
	podYAML = `
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: shop}
spec:
  containers:
  - {name: app, image: docker.io/library/nginx:1.27}
  - {name: debug-shell, image: busybox}
  - {name: side, image: docker.io/library/redis:7}
`
	configMapYAML = `
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: shop, labels: {app: web}}
data: {k: v}
`
	labConfigMapYAML = `
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: lab}
data: {k: v}
`
	secretYAML = `
apiVersion: v1
kind: Secret
metadata: {name: token, namespace: shop}
stringData: {token: s3cr3t}
`
)

// requestObject is the raw request.object of a review body.
func requestObject(t *testing.T, body []byte) []byte {
	t.Helper()
	var rv admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &rv); err != nil {
		t.Fatal(err)
	}
	return rv.Request.Object.Raw
}

// decodeJSON decodes as the engine's objects are held (ints as int64).
func decodeJSON(t *testing.T, data []byte) any {
	t.Helper()
	var v any
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(data, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestReviewRoundTrip(t *testing.T) {
	w := newWorld(t)
	f := newTLS(t)
	srv := start(t, newServer(t, w, f, nil))
	client := f.client()

	cases := []struct {
		name     string
		req      request
		version  string
		wantOps  []string // substrings of the patch
		noPatch  bool
		annotate map[string]string
	}{
		{
			name:    "a v1 review of a Pod gets its images rewritten and its debug container removed",
			req:     request{op: admission.Create, object: podYAML},
			version: "v1",
			wantOps: []string{`"path":"/spec/containers/0/image","value":"mirror.example.com/library/nginx:1.27"`, `"op":"remove"`},
			annotate: map[string]string{
				AnnotationPolicies: "drop-debug-containers/drop-debug-containers,rewrite-images/rewrite-images",
				AnnotationReinvoke: "true",
			},
		},
		{
			name:    "a v1beta1 review is answered in v1beta1",
			req:     request{op: admission.Create, object: podYAML, reviewVersions: []string{"v1beta1"}},
			version: "v1beta1",
			wantOps: []string{`"value":"mirror.example.com/library/redis:7"`},
		},
		{
			name:     "an ApplyConfiguration adds labels whose keys need JSON pointer escaping",
			req:      request{op: admission.Create, object: configMapYAML},
			version:  "v1",
			wantOps:  []string{`"path":"/metadata/labels/team","value":"platform"`, `"path":"/metadata/labels/a~1b~0c","value":"escaped"`},
			annotate: map[string]string{AnnotationPolicies: "team-label/team-label", AnnotationReinvoke: "true"},
		},
		{
			name:    "an UPDATE is mutated with the old object present",
			req:     request{op: admission.Update, object: configMapYAML, old: strings.Replace(configMapYAML, "{k: v}", "{k: old}", 1)},
			version: "v1",
			wantOps: []string{`"path":"/metadata/labels/team","value":"platform"`},
		},
		{
			name:    "a request in a namespace no binding selects passes unchanged",
			req:     request{op: admission.Create, object: labConfigMapYAML},
			version: "v1",
			noPatch: true,
		},
		{
			name:    "a DELETE passes without a patch",
			req:     request{op: admission.Delete, object: configMapYAML, old: configMapYAML},
			version: "v1",
			noPatch: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			uid, body, into, attrs := w.review(t, tc.req)
			code, out := post(t, client, srv.url+PathMutate+"?timeout=10s", body)
			if code != http.StatusOK {
				t.Fatalf("HTTP %d: %s", code, out)
			}
			if err := json.Unmarshal(out, into); err != nil {
				t.Fatal(err)
			}
			// What kube-apiserver checks of the answer.
			got, err := webhookrequest.VerifyAdmissionResponse(types.UID(uid), true, into)
			if err != nil {
				t.Fatalf("kube-apiserver would refuse the response: %v\n%s", err, out)
			}
			var echoed types.UID
			switch rv := into.(type) {
			case *admissionv1.AdmissionReview:
				echoed = rv.Response.UID
				if tc.version != "v1" {
					t.Errorf("answered in v1, want %s", tc.version)
				}
			case *admissionv1beta1.AdmissionReview:
				echoed = rv.Response.UID
				if rv.APIVersion != "admission.k8s.io/v1beta1" || rv.Kind != "AdmissionReview" {
					t.Errorf("answered as %s %s", rv.APIVersion, rv.Kind)
				}
				if tc.version != "v1beta1" {
					t.Errorf("answered in v1beta1, want %s", tc.version)
				}
			}
			if string(echoed) != uid {
				t.Errorf("uid %q, want %q", echoed, uid)
			}
			if !got.Allowed {
				t.Fatalf("denied: %v", got.Result)
			}
			for k, v := range tc.annotate {
				if got.AuditAnnotations[k] != v {
					t.Errorf("auditAnnotations[%s] = %q, want %q (all: %v)", k, got.AuditAnnotations[k], v, got.AuditAnnotations)
				}
			}
			if tc.noPatch {
				if len(got.Patch) != 0 {
					t.Fatalf("patch %s, want none", got.Patch)
				}
				return
			}
			for _, op := range tc.wantOps {
				if !strings.Contains(string(got.Patch), op) {
					t.Errorf("patch lacks %s:\n%s", op, got.Patch)
				}
			}
			// The patch applied as kube-apiserver applies it gives exactly
			// the engine's object.
			want, err := w.engine.Admit(context.Background(), matching.AttributesFrom(attrs))
			if err != nil || want.Denied != nil {
				t.Fatalf("engine: %v %v", err, want.Denied)
			}
			p, err := evanphxjsonpatch.DecodePatch(got.Patch)
			if err != nil {
				t.Fatal(err)
			}
			patched, err := p.Apply(requestObject(t, body))
			if err != nil {
				t.Fatal(err)
			}
			wantJSON, err := json.Marshal(want.Object)
			if err != nil {
				t.Fatal(err)
			}
			if g, w := decodeJSON(t, patched), decodeJSON(t, wantJSON); !reflect.DeepEqual(g, w) {
				t.Errorf("patched object:\n%s\nengine's object:\n%s", patched, wantJSON)
			}
		})
	}
}

func TestDenial(t *testing.T) {
	w := newWorld(t)
	f := newTLS(t)
	srv := start(t, newServer(t, w, f, nil))
	uid, body, into, attrs := w.review(t, request{op: admission.Create, object: secretYAML})
	got := answer(t, f, srv, uid, body, into)
	want, err := w.engine.Admit(context.Background(), matching.AttributesFrom(attrs))
	if err != nil || want.Denied == nil {
		t.Fatalf("the engine should deny: %v", err)
	}
	if got.Allowed || len(got.Patch) != 0 {
		t.Fatalf("allowed=%v patch=%s, want a denial without patch", got.Allowed, got.Patch)
	}
	st := got.Result
	if st == nil || st.Code != 403 || st.Reason != want.Denied.ErrStatus.Reason || st.Message != want.Denied.ErrStatus.Message {
		t.Fatalf("status %+v\nwant code 403, reason %q, message %q", st, want.Denied.ErrStatus.Reason, want.Denied.ErrStatus.Message)
	}
	if !strings.Contains(st.Message, "policy 'needs-owner' with binding 'needs-owner' denied request") {
		t.Errorf("message %q", st.Message)
	}
	if st.Details == nil || len(st.Details.Causes) != 1 {
		t.Errorf("details %+v, want the engine's causes", st.Details)
	}
}

// TestIntegerOutOfRangeIsRefused: a review whose object holds an integer
// that does not fit its field (no API server sends one: its decoder refuses
// such a body) is answered with that decoder's 400, not admitted with the
// integer wrapped around into the patch.
func TestIntegerOutOfRangeIsRefused(t *testing.T) {
	w := newWorld(t)
	f := newTLS(t)
	srv := start(t, newServer(t, w, f, nil))
	uid, body, into, _ := w.review(t, request{op: admission.Create, object: podYAML})
	var rv map[string]any
	if err := json.Unmarshal(body, &rv); err != nil {
		t.Fatal(err)
	}
	rv["request"].(map[string]any)["object"].(map[string]any)["spec"].(map[string]any)["priority"] = 3000000000
	body, err := json.Marshal(rv)
	if err != nil {
		t.Fatal(err)
	}
	got := answer(t, f, srv, uid, body, into)
	want := `Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal number 3000000000 into Go struct field PodSpec.spec.priority of type int32`
	if got.Allowed || len(got.Patch) != 0 || got.Result == nil || got.Result.Code != http.StatusBadRequest || got.Result.Message != want {
		t.Fatalf("allowed=%v patch=%s status=%+v, want the 400 %q", got.Allowed, got.Patch, got.Result, want)
	}
}

// answer posts a review body to srv's mutating path and returns the
// response as kube-apiserver reads it (VerifyAdmissionResponse).
func answer(t *testing.T, f *tlsFixture, srv *running, uid string, body []byte, into runtime.Object) *webhookrequest.AdmissionResponse {
	t.Helper()
	code, out := post(t, f.client(), srv.url+PathMutate, body)
	if code != http.StatusOK {
		t.Fatalf("HTTP %d: %s", code, out)
	}
	if err := json.Unmarshal(out, into); err != nil {
		t.Fatal(err)
	}
	got, err := webhookrequest.VerifyAdmissionResponse(types.UID(uid), true, into)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// ObserveMutation's series looked up once are the vectors' own: every
// call counts in the series of its labels, as WithLabelValues would.
func TestObserveMutationCountsPerLabels(t *testing.T) {
	m := NewMetrics()
	calls := []policyLabels{{"a", "a-b", "no_error"}, {"a", "a-b", "no_error"}, {"a", "a-c", "no_error"}, {"b", "b", "invalid_error"}, {"a", "a-b", "no_error"}}
	for _, l := range calls {
		m.ObserveMutation(t.Context(), time.Millisecond, l.policy, l.binding, l.errorType)
	}
	want := map[policyLabels]float64{{"a", "a-b", "no_error"}: 3, {"a", "a-c", "no_error"}: 1, {"b", "b", "invalid_error"}: 1}
	for l, n := range want {
		if got := testutil.ToFloat64(m.policyCheck.WithLabelValues(l.policy, l.binding, l.errorType)); got != n {
			t.Errorf("check_total%v = %v, want %v", l, got, n)
		}
	}
	if got := testutil.CollectAndCount(m.policyLatency); got != len(want) {
		t.Errorf("check_duration_seconds has %d series, want %d", got, len(want))
	}
}

// TestObserveMutationConcurrently: reviews observing at once, new series
// among them, count every call in the series of its labels (the series'
// map published by copy and read without a lock; run under -race).
func TestObserveMutationConcurrently(t *testing.T) {
	m := NewMetrics()
	const goroutines, calls, series = 4, 500, 37
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range calls {
				k := (i*7 + g) % series
				m.ObserveMutation(t.Context(), time.Millisecond, fmt.Sprintf("p%d", k), "b", "no_error")
			}
		}()
	}
	wg.Wait()
	total := 0.0
	for k := range series {
		total += testutil.ToFloat64(m.policyCheck.WithLabelValues(fmt.Sprintf("p%d", k), "b", "no_error"))
	}
	if total != goroutines*calls {
		t.Fatalf("%v observations counted, want %d", total, goroutines*calls)
	}
	if got := len(*m.policies.Load()); got != series {
		t.Fatalf("%d series kept, want %d", got, series)
	}
	if got := testutil.CollectAndCount(m.policyLatency); got != series {
		t.Fatalf("check_duration_seconds has %d series, want %d", got, series)
	}
}

// BenchmarkObserveMutation observes the mutations of concurrent reviews
// of 20 policies (their series made at the first observations).
func BenchmarkObserveMutation(b *testing.B) {
	m := NewMetrics()
	var names, bindings [20]string
	for i := range names {
		names[i] = fmt.Sprintf("policy-%d", i)
		bindings[i] = names[i] + "-binding"
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			i++
			m.ObserveMutation(context.Background(), time.Duration(i%1000)*time.Microsecond, names[i%len(names)], bindings[i%len(names)], engine.ErrorTypeNone)
		}
	})
}
