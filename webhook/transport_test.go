package webhook

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// fakeWriter is an http.ResponseWriter that takes any status (httptest's
// recorder refuses some) and has a read deadline to set.
type fakeWriter struct {
	h        http.Header
	codes    []int
	body     bytes.Buffer
	deadline time.Time
}

func (f *fakeWriter) Header() http.Header {
	if f.h == nil {
		f.h = http.Header{}
	}
	return f.h
}
func (f *fakeWriter) WriteHeader(code int)        { f.codes = append(f.codes, code) }
func (f *fakeWriter) Write(b []byte) (int, error) { return f.body.Write(b) }
func (f *fakeWriter) SetReadDeadline(t time.Time) error {
	f.deadline = t
	return nil
}

// requestMetrics is the text of the requests counter, the in-flight gauge
// and the latency histogram's sample count (its sum and buckets are times).
func requestMetrics(t *testing.T, m *Metrics) string {
	t.Helper()
	families, err := m.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, f := range families {
		if !strings.HasPrefix(f.GetName(), "mutatis_webhook_request") {
			continue
		}
		for _, s := range f.GetMetric() {
			var labels []string
			for _, l := range s.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			fmt.Fprintf(&b, "%s{%s} counter %v gauge %v samples %v\n", f.GetName(), strings.Join(labels, ","),
				s.GetCounter().GetValue(), s.GetGauge().GetValue(), s.GetHistogram().GetSampleCount())
		}
	}
	return b.String()
}

// TestInstrumentIsPromhttps: instrument counts, observes and gauges what
// promhttp's middlewares (instrumentReference) do, for every way a handler
// answers: a body alone, a status, statuses written twice, nothing at all,
// codes promhttp names "unknown", a panic; on two paths, in every order.
func TestInstrumentIsPromhttps(t *testing.T) {
	type answer struct {
		name  string
		serve func(w http.ResponseWriter)
	}
	answers := []answer{
		{"body", func(w http.ResponseWriter) { _, _ = w.Write([]byte("{}")) }},
		{"nothing", func(http.ResponseWriter) {}},
		{"deadline", func(w http.ResponseWriter) {
			if err := http.NewResponseController(w).SetReadDeadline(time.Unix(1, 0).Add(time.Hour * 1e5)); err != nil {
				panic(err)
			}
			_, _ = w.Write([]byte("{}"))
		}},
		{"panic", func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusInternalServerError)
			panic(http.ErrAbortHandler)
		}},
	}
	for _, code := range []int{100, 103, 200, 201, 204, 304, 400, 408, 413, 418, 429, 500, 503, 599, 600, 999, 42, -1} {
		answers = append(answers,
			answer{fmt.Sprint("status ", code), func(w http.ResponseWriter) {
				w.WriteHeader(code)
				_, _ = w.Write([]byte("{}"))
			}},
			answer{fmt.Sprint("twice ", code), func(w http.ResponseWriter) {
				w.WriteHeader(http.StatusTooManyRequests)
				w.WriteHeader(code)
			}},
			answer{fmt.Sprint("after the body ", code), func(w http.ResponseWriter) {
				_, _ = w.Write([]byte("{}"))
				w.WriteHeader(code)
			}})
	}
	fast, ref := NewMetrics(), NewMetrics()
	if got, want := requestMetrics(t, fast), requestMetrics(t, ref); got != want || strings.Contains(got, "requests_total") || strings.Contains(got, "duration") {
		t.Fatalf("before any request: instrument exports\n%s\npromhttp\n%s", got, want)
	}
	serve := func(h http.Handler, w http.ResponseWriter, r *http.Request) (panicked any) {
		defer func() { panicked = recover() }()
		h.ServeHTTP(w, r)
		return nil
	}
	for round, order := range [][]int{{0, 1}, {1, 0}} {
		for i, a := range answers {
			path := []string{PathMutate, PathMutateFail}[order[i%2]]
			h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { a.serve(w) })
			r, err := http.NewRequest(http.MethodPost, "https://webhook"+path, nil)
			if err != nil {
				t.Fatal(err)
			}
			var fw, rw fakeWriter
			fp, rp := serve(fast.instrument(path, h), &fw, r), serve(ref.instrumentReference(path, h), &rw, r)
			if fp != rp || fmt.Sprint(fw.codes) != fmt.Sprint(rw.codes) || fw.body.String() != rw.body.String() || !fw.deadline.Equal(rw.deadline) {
				t.Errorf("round %d, %s: instrument answered %v %q %v (panic %v), promhttp %v %q %v (panic %v)",
					round, a.name, fw.codes, fw.body.String(), fw.deadline, fp, rw.codes, rw.body.String(), rw.deadline, rp)
			}
			if got, want := requestMetrics(t, fast), requestMetrics(t, ref); got != want {
				t.Fatalf("round %d, after %s on %s: instrument exports\n%s\npromhttp\n%s", round, a.name, path, got, want)
			}
		}
	}
	if got := requestMetrics(t, fast); !strings.Contains(got, `mutatis_webhook_requests_total{code="unknown",path="/mutate"}`) ||
		!strings.Contains(got, `mutatis_webhook_requests_in_flight{} counter 0 gauge 0`) || !strings.Contains(got, `mutatis_webhook_request_duration_seconds{} counter 0 gauge 0 samples `) {
		t.Errorf("the comparison did not see the series it should:\n%s", got)
	}
}

// TestStatusCodeIsPromhttps: statusCode against promhttp's code label,
// for every status from -1 to 1,000.
func TestStatusCodeIsPromhttps(t *testing.T) {
	m := NewMetrics()
	for status := -1; status <= 1000; status++ {
		h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			if status != 0 {
				w.WriteHeader(status)
			}
		})
		r, err := http.NewRequest(http.MethodPost, "https://webhook/x", nil)
		if err != nil {
			t.Fatal(err)
		}
		path := fmt.Sprint("/", status)
		m.instrumentReference(path, h).ServeHTTP(&fakeWriter{}, r)
		want := ""
		for _, code := range []string{"200", "unknown", fmt.Sprint(status)} {
			if c, err := m.requests.GetMetricWithLabelValues(path, code); err == nil && testutil.ToFloat64(c) == 1 {
				want = code
			}
		}
		if got := statusCode(status); got != want {
			t.Errorf("statusCode(%d) = %q, promhttp counts it as %q", status, got, want)
		}
	}
}

// contentTypes are Content-Type values for jsonContentType's tests:
// kube-apiserver's, and what a parse accepts or refuses around it.
var contentTypes = []string{
	"application/json", "", "application/json ", " application/json", "Application/JSON", "APPLICATION/JSON",
	"application/json; charset=utf-8", "application/json;charset=UTF-8", "application/json;", "application/json; charset",
	"application/json; a=b; a=c", "application/jsonx", "application/jso", "application/yaml", "text/json",
	"application/json\x00", "application/json\t", "application/json,text/plain", "application/*", "*/*", "application/",
	"application/json; charset=\"utf-8\"", "application/json; charset*=utf-8''x", "application/vnd.kubernetes.protobuf",
}

// TestJSONContentTypeIsTheReference: jsonContentType answers as
// mime.ParseMediaType's media type does (jsonContentTypeReference).
func TestJSONContentTypeIsTheReference(t *testing.T) {
	if !jsonContentType("application/json") {
		t.Fatal(`"application/json" refused`)
	}
	for _, v := range contentTypes {
		if got, want := jsonContentType(v), jsonContentTypeReference(v); got != want {
			t.Errorf("jsonContentType(%q) = %v, the reference %v", v, got, want)
		}
	}
}

// FuzzJSONContentType holds jsonContentType to its reference on any value.
func FuzzJSONContentType(f *testing.F) {
	for _, v := range contentTypes {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if got, want := jsonContentType(v), jsonContentTypeReference(v); got != want {
			t.Errorf("jsonContentType(%q) = %v, the reference %v", v, got, want)
		}
	})
}

// BenchmarkInstrument: the HTTP metrics of one review answered 200, by
// instrument and by promhttp's middlewares (instrumentReference), around a
// handler that checks the Content-Type and writes a body.
//
//	go test ./webhook -run XXX -bench Instrument -benchmem
func BenchmarkInstrument(b *testing.B) {
	body := []byte("{}")
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !jsonContentType(r.Header.Get("Content-Type")) {
			panic("not JSON")
		}
		_, _ = w.Write(body)
	})
	r, err := http.NewRequest(http.MethodPost, "https://webhook"+PathMutate, nil)
	if err != nil {
		b.Fatal(err)
	}
	r.Header.Set("Content-Type", "application/json")
	m := NewMetrics()
	for _, impl := range []struct {
		name string
		h    http.Handler
	}{{"promhttp", m.instrumentReference(PathMutate, h)}, {"mutatis", m.instrument(PathMutate, h)}} {
		b.Run("impl="+impl.name, func(b *testing.B) {
			b.ReportAllocs()
			var w fakeWriter
			for b.Loop() {
				w.body.Reset()
				w.codes = w.codes[:0]
				impl.h.ServeHTTP(&w, r)
			}
		})
	}
}
