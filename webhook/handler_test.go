package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/internal/valuetest"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/mutatis-dev/mutatis/matching"
)

// passThrough admits every request unchanged.
var passThrough = fakeAdmitter(func(_ context.Context, a *matching.Attributes) (chain.Result, error) {
	var res chain.Result
	if a.Object != nil {
		res.Object = a.Object.Object
	}
	return res, nil
})

// serveOnce runs one request through a Handler.
func serveOnce(h http.Handler, method, target, contentType string, body []byte) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, target, bytes.NewReader(body))
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec
}

func statusBody(t *testing.T, rec *httptest.ResponseRecorder) metav1.Status {
	t.Helper()
	var st metav1.Status
	if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
		t.Fatalf("body is not a Status: %v\n%s", err, rec.Body)
	}
	return st
}

const minimalReview = `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u1","kind":{"group":"","version":"v1","kind":"ConfigMap"},"resource":{"group":"","version":"v1","resource":"configmaps"},"namespace":"shop","operation":"CREATE","userInfo":{"username":"alice"},"object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"shop"}}}}`

func TestMalformedReviews(t *testing.T) {
	h := &Handler{Admitter: passThrough, MaxRequestBytes: 1024}
	cases := []struct {
		name, method, target, contentType, body string
		wantCode                                int
		wantMessage                             string
	}{
		{name: "a body that is not JSON", body: "apiVersion: v1", wantCode: 400, wantMessage: "decoding AdmissionReview"},
		{name: "an empty body", body: "", wantCode: 400, wantMessage: "empty body"},
		{name: "a JSON array", body: "[]", wantCode: 400, wantMessage: "decoding AdmissionReview"},
		{name: "another kind", body: `{"apiVersion":"v1","kind":"Pod"}`, wantCode: 400, wantMessage: `got kind "Pod" of apiVersion "v1"`},
		{name: "an unknown AdmissionReview version", body: `{"apiVersion":"admission.k8s.io/v2","kind":"AdmissionReview","request":{"uid":"u"}}`, wantCode: 400, wantMessage: `apiVersion "admission.k8s.io/v2"`},
		{name: "no request", body: `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`, wantCode: 400, wantMessage: "has no request"},
		{name: "no uid", body: `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"operation":"CREATE"}}`, wantCode: 400, wantMessage: "has no uid"},
		{name: "an unknown operation", body: strings.Replace(minimalReview, `"CREATE"`, `"PATCH"`, 1), wantCode: 400, wantMessage: `request.operation must be CREATE, UPDATE, DELETE or CONNECT, not "PATCH"`},
		{name: "an object that is not an object", body: strings.Replace(minimalReview, `"object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"shop"}}`, `"object":[1]`, 1), wantCode: 400, wantMessage: "request.object"},
		{name: "a body over the limit", body: strings.Replace(minimalReview, `"alice"`, `"`+strings.Repeat("a", 2048)+`"`, 1), wantCode: 400, wantMessage: "request body larger than 1024 bytes"},
		{name: "another content type", contentType: "text/plain", body: minimalReview, wantCode: 400, wantMessage: "Content-Type must be application/json"},
		{name: "a GET", method: http.MethodGet, wantCode: 405, wantMessage: "must be POSTed"},
		{name: "an invalid timeout", target: "/mutate?timeout=soon", body: minimalReview, wantCode: 400, wantMessage: `invalid timeout "soon"`},
		{name: "a well-formed review", body: minimalReview, wantCode: 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			method, target, ct := tc.method, tc.target, tc.contentType
			if method == "" {
				method = http.MethodPost
			}
			if target == "" {
				target = "/mutate"
			}
			if ct == "" {
				ct = "application/json"
			}
			rec := serveOnce(h, method, target, ct, []byte(tc.body))
			if rec.Code != tc.wantCode {
				t.Fatalf("HTTP %d, want %d: %s", rec.Code, tc.wantCode, rec.Body)
			}
			if tc.wantCode == 200 {
				return
			}
			st := statusBody(t, rec)
			if st.Code != int32(tc.wantCode) || st.Status != metav1.StatusFailure || !strings.Contains(st.Message, tc.wantMessage) {
				t.Errorf("status %+v, want code %d with message containing %q", st, tc.wantCode, tc.wantMessage)
			}
		})
	}
}

func TestNoMutationNoPatch(t *testing.T) {
	// The engine presents objects through the Go types of this build,
	// which drop fields they do not know; a request no policy mutated must
	// not get a patch removing them.
	dropUnknown := fakeAdmitter(func(_ context.Context, a *matching.Attributes) (chain.Result, error) {
		obj := a.Object.DeepCopy()
		delete(obj.Object, "futureField")
		return chain.Result{Object: obj.Object, Records: chain.Records{Invocations: []chain.Invocation{{Record: chain.Record{Configuration: "p", Hook: "b", Skip: chain.SkipBindingNotSelected}}}}}, nil
	})
	body := strings.Replace(minimalReview, `"metadata":{"name":"c","namespace":"shop"}`, `"metadata":{"name":"c","namespace":"shop"},"futureField":"x"`, 1)
	rec := serveOnce(&Handler{Admitter: dropUnknown}, http.MethodPost, PathMutate, "application/json", []byte(body))
	var rv admissionv1.AdmissionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &rv); err != nil || rec.Code != 200 {
		t.Fatalf("HTTP %d: %s", rec.Code, rec.Body)
	}
	if !rv.Response.Allowed || rv.Response.Patch != nil || rv.Response.PatchType != nil {
		t.Errorf("response %+v, want allowed without patch", rv.Response)
	}
}

func TestTimeoutReachesTheEngine(t *testing.T) {
	deadlines := make(chan time.Time, 1)
	h := &Handler{Admitter: fakeAdmitter(func(ctx context.Context, a *matching.Attributes) (chain.Result, error) {
		d, ok := ctx.Deadline()
		if !ok {
			return chain.Result{}, errors.New("no deadline")
		}
		deadlines <- d
		return chain.Result{}, nil
	})}
	before := time.Now()
	rec := serveOnce(h, http.MethodPost, "/mutate?timeout=1h", "application/json", []byte(minimalReview))
	after := time.Now()
	if rec.Code != 200 {
		t.Fatalf("HTTP %d: %s", rec.Code, rec.Body)
	}
	d := <-deadlines
	if d.Before(before.Add(time.Hour)) || d.After(after.Add(time.Hour)) {
		t.Errorf("deadline %v, want one hour after the request (%v..%v)", d, before.Add(time.Hour), after.Add(time.Hour))
	}
}

func TestEngineErrorsDenyWithTheirStatus(t *testing.T) {
	cases := []struct {
		name     string
		err      error
		wantCode int32
	}{
		{name: "a plain error is an internal error", err: errors.New("boom"), wantCode: 500},
		{name: "a status error keeps its code", err: &apiStatusError{code: 400}, wantCode: 400},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := &Handler{Admitter: fakeAdmitter(func(context.Context, *matching.Attributes) (chain.Result, error) {
				return chain.Result{}, tc.err
			})}
			rec := serveOnce(h, http.MethodPost, "/mutate", "application/json", []byte(minimalReview))
			var rv admissionv1.AdmissionReview
			if err := json.Unmarshal(rec.Body.Bytes(), &rv); err != nil || rec.Code != 200 {
				t.Fatalf("HTTP %d: %s", rec.Code, rec.Body)
			}
			if rv.Response.Allowed || rv.Response.Result == nil || rv.Response.Result.Code != tc.wantCode {
				t.Errorf("response %+v, want a denial with code %d", rv.Response, tc.wantCode)
			}
		})
	}
}

// apiStatusError is an error carrying a Status.
type apiStatusError struct{ code int32 }

func (e *apiStatusError) Error() string { return "bad" }
func (e *apiStatusError) Status() metav1.Status {
	return metav1.Status{Status: metav1.StatusFailure, Code: e.code, Reason: metav1.StatusReasonBadRequest, Message: "bad"}
}

func TestReadiness(t *testing.T) {
	var ready atomic.Bool
	s, err := NewServer(Options{
		Admitter:       passThrough,
		GetCertificate: nil,
		Ready: func() error {
			if !ready.Load() {
				return errors.New("policies not loaded")
			}
			return nil
		},
	})
	if err == nil || s != nil {
		t.Fatal("NewServer without a certificate should fail")
	}
	f := newTLS(t)
	s = newServer(t, nil, f, func(o *Options) {
		o.Admitter = passThrough
		o.Ready = func() error {
			if !ready.Load() {
				return errors.New("policies not loaded")
			}
			return nil
		}
	})
	h := s.Handler()
	steps := []struct {
		name       string
		ready      bool
		path       string
		wantCode   int
		wantInBody string
	}{
		{name: "healthz is ok before ready", path: PathHealthz, wantCode: 200, wantInBody: "ok"},
		{name: "readyz says why it is not ready", path: PathReadyz, wantCode: 503, wantInBody: "not ready: policies not loaded"},
		{name: "mutate is unavailable before ready", path: PathMutate, wantCode: 503, wantInBody: "not ready"},
		{name: "readyz is ok once ready", ready: true, path: PathReadyz, wantCode: 200, wantInBody: "ok"},
		{name: "mutate answers once ready", ready: true, path: PathMutate, wantCode: 200, wantInBody: `"allowed":true`},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			ready.Store(st.ready)
			method := http.MethodGet
			if st.path == PathMutate {
				method = http.MethodPost
			}
			rec := serveOnce(h, method, st.path, "application/json", []byte(minimalReview))
			if rec.Code != st.wantCode || !strings.Contains(rec.Body.String(), st.wantInBody) {
				t.Errorf("HTTP %d %q, want %d with %q", rec.Code, rec.Body, st.wantCode, st.wantInBody)
			}
		})
	}
}

func TestMetricsAfterAReview(t *testing.T) {
	w := newWorld(t)
	f := newTLS(t)
	s := newServer(t, w, f, nil)
	_, body, _, _ := w.review(t, request{op: admission.Create, object: podYAML})
	rec := serveOnce(s.Handler(), http.MethodPost, PathMutate, "application/json", body)
	if rec.Code != 200 {
		t.Fatalf("HTTP %d: %s", rec.Code, rec.Body)
	}
	rec = serveOnce(s.Handler(), http.MethodGet, PathMetrics, "", nil)
	text := rec.Body.String()
	for _, want := range []string{
		`apiserver_mutating_admission_policy_check_total{error_type="no_error",policy="rewrite-images",policy_binding="rewrite-images"} 2`,
		`apiserver_mutating_admission_policy_check_total{error_type="no_error",policy="drop-debug-containers",policy_binding="drop-debug-containers"} 1`,
		`apiserver_mutating_admission_policy_check_duration_seconds_bucket{error_type="no_error",policy="rewrite-images",policy_binding="rewrite-images",le="1"} 2`,
		`mutatis_webhook_requests_total{code="200",path="/mutate"} 1`,
		`mutatis_webhook_request_duration_seconds_count 1`,
		`mutatis_webhook_requests_in_flight 0`,
		`go_goroutines`,
		`go_memstats_heap_inuse_bytes`,
		"# TYPE go_gc_heap_live_bytes gauge\ngo_gc_heap_live_bytes ",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if t.Failed() {
		t.Log(text)
	}
}

func TestDryRunExplain(t *testing.T) {
	w := newWorld(t)
	cases := []struct {
		name         string
		explain      bool
		dryRun       bool
		wantWarnings []string
	}{
		{name: "a dry run with --explain-dry-run gets the trace", explain: true, dryRun: true, wantWarnings: []string{
			"mutatis: pass 1: drop-debug-containers/drop-debug-containers: applied 1 mutation(s), runtime cost",
			"mutatis: pass 1: rewrite-images/rewrite-images: applied 1 mutation(s)",
			"mutatis: pass 2: drop-debug-containers/drop-debug-containers: skipped: not reinvoked",
		}},
		{name: "a request that is no dry run gets no warnings", explain: true},
		{name: "without --explain-dry-run a dry run gets no warnings", dryRun: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := &Handler{Admitter: w.engine, ExplainDryRun: tc.explain}
			_, body, _, _ := w.review(t, request{op: admission.Create, object: podYAML, dryRun: tc.dryRun})
			rec := serveOnce(h, http.MethodPost, PathMutate, "application/json", body)
			var rv admissionv1.AdmissionReview
			if err := json.Unmarshal(rec.Body.Bytes(), &rv); err != nil || rec.Code != 200 {
				t.Fatalf("HTTP %d: %s", rec.Code, rec.Body)
			}
			if len(tc.wantWarnings) == 0 && len(rv.Response.Warnings) > 0 {
				t.Fatalf("warnings %q, want none", rv.Response.Warnings)
			}
			all := strings.Join(rv.Response.Warnings, "\n")
			for _, want := range tc.wantWarnings {
				if !strings.Contains(all, want) {
					t.Errorf("warnings lack %q:\n%s", want, all)
				}
			}
			for _, w := range rv.Response.Warnings {
				if len(w) > maxWarningLength || strings.ContainsAny(w, "\r\n") {
					t.Errorf("warning %q is too long or has line breaks", w)
				}
			}
		})
	}
}

func TestStatusz(t *testing.T) {
	f := newTLS(t)
	var status atomic.Pointer[map[string]any]
	s := newServer(t, nil, f, func(o *Options) {
		o.Admitter = passThrough
		o.Status = func() any {
			if p := status.Load(); p != nil {
				return *p
			}
			return nil
		}
	})
	h := s.Handler()
	steps := []struct {
		name     string
		status   map[string]any
		method   string
		wantCode int
		wantBody string
	}{
		{name: "nothing to report yet", method: http.MethodGet, wantCode: 503, wantBody: "no status yet\n"},
		{name: "the status as JSON", status: map[string]any{"generation": 3, "policies": map[string]string{"p": "12"}}, method: http.MethodGet, wantCode: 200, wantBody: `{"generation":3,"policies":{"p":"12"}}` + "\n"},
		{name: "only GET", status: map[string]any{"generation": 3}, method: http.MethodPost, wantCode: 405, wantBody: "method not allowed\n"},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if st.status != nil {
				status.Store(&st.status)
			}
			rec := serveOnce(h, st.method, PathStatusz, "", nil)
			if rec.Code != st.wantCode || rec.Body.String() != st.wantBody {
				t.Errorf("HTTP %d %q, want %d %q", rec.Code, rec.Body, st.wantCode, st.wantBody)
			}
		})
	}
	// Without Options.Status there is no /statusz.
	plain := newServer(t, nil, f, func(o *Options) { o.Admitter = passThrough })
	if rec := serveOnce(plain.Handler(), http.MethodGet, PathStatusz, "", nil); rec.Code != http.StatusNotFound {
		t.Errorf("/statusz without Options.Status: HTTP %d, want 404", rec.Code)
	}
}

func TestMaxInFlight(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var calls atomic.Int32
	blocking := fakeAdmitter(func(ctx context.Context, a *matching.Attributes) (chain.Result, error) {
		if calls.Add(1) == 1 {
			close(entered)
			<-release
		}
		return passThrough(ctx, a)
	})
	s := newServer(t, nil, newTLS(t), func(o *Options) {
		o.Admitter = splitter{blocking}
		o.MaxInFlight = 1
	})
	h := s.Handler()
	first := make(chan *httptest.ResponseRecorder)
	go func() { first <- serveOnce(h, http.MethodPost, PathMutate, "application/json", []byte(minimalReview)) }()
	<-entered
	// The slot is shared by all review paths.
	for _, path := range []string{PathMutate, PathMutateFail, PathMutateIgnore} {
		rec := serveOnce(h, http.MethodPost, path, "application/json", []byte(minimalReview))
		if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "1" || !strings.Contains(rec.Body.String(), "too many reviews in flight (1, --max-in-flight)") {
			t.Errorf("%s while one review is in flight: HTTP %d %q (Retry-After %q), want 429", path, rec.Code, rec.Body, rec.Header().Get("Retry-After"))
		}
	}
	// Probes are not reviews.
	if rec := serveOnce(h, http.MethodGet, PathHealthz, "", nil); rec.Code != http.StatusOK {
		t.Errorf("/healthz while full: HTTP %d", rec.Code)
	}
	close(release)
	if rec := <-first; rec.Code != http.StatusOK {
		t.Errorf("the review in flight: HTTP %d %q", rec.Code, rec.Body)
	}
	if rec := serveOnce(h, http.MethodPost, PathMutate, "application/json", []byte(minimalReview)); rec.Code != http.StatusOK {
		t.Errorf("after the slot is free: HTTP %d %q", rec.Code, rec.Body)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("the Admitter ran %d times, want 2 (refused reviews are not evaluated)", n)
	}
}

func TestReviewPastItsDeadlineIsNotEvaluated(t *testing.T) {
	var calls atomic.Int32
	counting := fakeAdmitter(func(ctx context.Context, a *matching.Attributes) (chain.Result, error) {
		calls.Add(1)
		return passThrough(ctx, a)
	})
	s := newServer(t, nil, newTLS(t), func(o *Options) { o.Admitter = counting })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := httptest.NewRequest(http.MethodPost, PathMutate+"?timeout=10s", strings.NewReader(minimalReview)).WithContext(ctx)
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "deadline passed before it was evaluated") || !strings.Contains(rec.Body.String(), `"reason":"Timeout"`) {
		t.Errorf("HTTP %d %q, want 503 Timeout", rec.Code, rec.Body)
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("the Admitter ran %d times for a review whose caller gave up", n)
	}
}

// splitter serves its Admitter on the per-failure-policy paths too.
type splitter struct{ chain.Admitter }

func (s splitter) Only(admissionregistrationv1.FailurePolicyType) chain.Admitter { return s.Admitter }

// TestPatchFromTheRequestAsSent checks the patch the Handler diffs from its
// own decoding of the request object: it turns the object as sent into the
// engine's, including the apiVersion and kind the Handler fills in for the
// engine when the object has neither (the decoding differs from the JSON
// then, so it must not be diffed).
func TestPatchFromTheRequestAsSent(t *testing.T) {
	labeler := fakeAdmitter(func(_ context.Context, a *matching.Attributes) (chain.Result, error) {
		// Copy-on-write, as the engine: the result shares what it does not
		// change with a.Object.
		obj := make(map[string]any, len(a.Object.Object))
		for k, v := range a.Object.Object {
			obj[k] = v
		}
		meta := map[string]any{}
		for k, v := range obj["metadata"].(map[string]any) {
			meta[k] = v
		}
		meta["labels"] = map[string]any{"example.com/mutated": "true"}
		obj["metadata"] = meta
		return chain.Result{Object: obj, Records: chain.Records{Invocations: []chain.Invocation{{Record: chain.Record{Configuration: "p", Hook: "b"}, Mutations: []chain.MutationOutcome{{}}}}}}, nil
	})
	cases := []struct {
		name, object string
		wantOps      []string
	}{
		{
			name:    "an object with apiVersion and kind",
			object:  `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"shop"},"data":{"k":"v"}}`,
			wantOps: []string{`[{"op":"add","path":"/metadata/labels","value":{"example.com/mutated":"true"}}]`},
		},
		{
			name:    "an object without them",
			object:  `{"metadata":{"name":"c","namespace":"shop"},"data":{"k":"v"}}`,
			wantOps: []string{`{"op":"add","path":"/apiVersion","value":"v1"}`, `{"op":"add","path":"/kind","value":"ConfigMap"}`, `{"op":"add","path":"/metadata/labels"`},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := strings.Replace(minimalReview, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"shop"}}`, tc.object, 1)
			rec := serveOnce(&Handler{Admitter: labeler}, http.MethodPost, PathMutate, "application/json", []byte(body))
			var rv admissionv1.AdmissionReview
			if err := json.Unmarshal(rec.Body.Bytes(), &rv); err != nil || rec.Code != 200 {
				t.Fatalf("HTTP %d: %s", rec.Code, rec.Body)
			}
			for _, op := range tc.wantOps {
				if !strings.Contains(string(rv.Response.Patch), op) {
					t.Errorf("patch lacks %s:\n%s", op, rv.Response.Patch)
				}
			}
			want := decodeJSON(t, []byte(tc.object)).(map[string]any)
			want["apiVersion"], want["kind"] = "v1", "ConfigMap"
			want["metadata"].(map[string]any)["labels"] = map[string]any{"example.com/mutated": "true"}
			valuetest.CheckPatch(t, []byte(tc.object), rv.Response.Patch, want)
		})
	}
}

// TestReadBody reads bodies whose Content-Length is right, missing, too
// small, too large or beyond the limit: always the whole body, as
// io.ReadAll, and MaxBytesReader's error past the limit.
func TestReadBody(t *testing.T) {
	for _, tc := range []struct {
		name          string
		size          int
		contentLength int64
		limit         int64
		wantErr       bool
	}{
		{"exact", 3000, 3000, 1 << 20, false},
		{"exact, beyond the presized buffer", 3*presizeLimit + 7, 3*presizeLimit + 7, 1 << 20, false},
		{"unknown", 3000, -1, 1 << 20, false},
		{"announced smaller", 3000, 100, 1 << 20, false},
		{"announced larger", 3000, 5000, 1 << 20, false},
		{"announced beyond the limit", 3000, 1 << 30, 1 << 20, false},
		{"body beyond the limit", 3000, 3000, 1000, true},
		{"body beyond the limit, announced within it", 3000, 500, 1000, true},
		{"empty announced", 3000, 0, 1 << 20, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := strings.Repeat("x", tc.size)
			rec := httptest.NewRecorder()
			r := http.MaxBytesReader(rec, io.NopCloser(iotest.HalfReader(strings.NewReader(body))), tc.limit)
			got, err := readBody(r, tc.contentLength, tc.limit)
			var tooLarge *http.MaxBytesError
			if tc.wantErr {
				if !errors.As(err, &tooLarge) {
					t.Fatalf("error %v, want *http.MaxBytesError", err)
				}
				return
			}
			if err != nil || string(got) != body {
				t.Fatalf("read %d bytes, %v; want %d", len(got), err, len(body))
			}
		})
	}
}

// timeoutParam is url.ParseQuery's Get("timeout") on every query.
func TestTimeoutParamIsParseQuerys(t *testing.T) {
	for _, q := range []string{
		"", "timeout=10s", "timeout=", "timeout", "=10s", "x=1", "timeout=10s&x=1", "x=1&timeout=2s", "timeout=1s&timeout=2s",
		"timeout=10s;x=1", "timeout=1%30s", "time%6Fut=3s", "timeout=1+s", "timeout=%zz", "timeout==10s", "Timeout=10s",
		"timeout=10s=", "&timeout=5s", "timeout=5s&", "a;timeout=5s", "timeout=%", "timeout=10s#x",
	} {
		want := ""
		if v, err := url.ParseQuery(q); err == nil || v != nil {
			want = v.Get("timeout")
		}
		if got := timeoutParam(q); got != want {
			t.Errorf("timeoutParam(%q) = %q, url.ParseQuery's %q", q, got, want)
		}
	}
}

func FuzzTimeoutParam(f *testing.F) {
	for _, q := range []string{"timeout=10s", "x=1&timeout=2s", "timeout=1%30s", "a;timeout=5s"} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, q string) {
		v, _ := url.ParseQuery(q)
		if got, want := timeoutParam(q), v.Get("timeout"); got != want {
			t.Errorf("timeoutParam(%q) = %q, url.ParseQuery's %q", q, got, want)
		}
	})
}
