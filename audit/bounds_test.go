package audit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"
)

// TestListerGoneIsRetriedBoundedly checks that a 410 Gone of an expired
// continue token counts against the retries: an API server that answers
// 410 to every later page ends the list with an error (issue 31, defect
// 4: the audit asked 619 times in 30 s and never ended).
func TestListerGoneIsRetriedBoundedly(t *testing.T) {
	p := &pagedList{n: 7, fail: func(token string, attempt int) error {
		if token == "" {
			return nil
		}
		e := apierrors.NewResourceExpired("The provided continue parameter is too old")
		e.ErrStatus.ListMeta.Continue = strconv.Itoa(100 + attempt) // a new token each time
		return e
	}}
	done := make(chan struct{})
	var names []string
	var retries int
	var err error
	go func() {
		defer close(done)
		names, _, retries, err = listAll(t, p, &Lister{PageSize: 3, Retries: 3, Backoff: time.Millisecond})
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the list did not end")
	}
	if err == nil || !strings.Contains(err.Error(), "the continue token expired (410 Gone) 4 times in a row") {
		t.Fatalf("err = %v", err)
	}
	if retries != 3 || len(p.log) != 5 || len(names) != 3 {
		t.Errorf("%d retries, %d requests, %d names; want 3, 5 and 3", retries, len(p.log), len(names))
	}
}

// TestListerMaxPages checks a bound on the pages of one list: an API
// server that hands out new continue tokens without end (issue 31).
func TestListerMaxPages(t *testing.T) {
	client := fakeCluster(t)
	var asked atomic.Int32
	client.PrependReactor("list", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		n := asked.Add(1)
		list := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMapList"}}
		list.SetContinue(fmt.Sprint("token-", n))
		return true, list, nil
	})
	err := (&Lister{Client: client, MaxPages: 50}).List(context.Background(), configMapsGVR, "ns", Selector{}, func(Page) error { return nil }, nil)
	if !errors.Is(err, ErrTooManyPages) || !strings.Contains(err.Error(), "after 50 pages (--max-pages)") {
		t.Errorf("err = %v", err)
	}
	if n := asked.Load(); n != 50 {
		t.Errorf("%d requests, want 50", n)
	}
}

// TestListerRequestTimeout checks each list request is bounded: an API
// server whose headers never come, or whose body never ends, fails the
// request at the timeout; it is retried, then the list fails (issue 31,
// defect 5: the audit waited for ever).
func TestListerRequestTimeout(t *testing.T) {
	for _, c := range []struct {
		name    string
		handler func(w http.ResponseWriter, r *http.Request)
	}{
		{"headers never come", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }},
		{"body never ends", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"apiVersion":"v1","kind":"ConfigMapList","metadata":{},"items":[`)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(c.handler))
			defer srv.Close()
			// The requests are counted as the Lister sends them: the
			// server's handler may be reached after a request's 100ms
			// have passed (or never, in a process starved under -race).
			var requests atomic.Int32
			cfg := &rest.Config{Host: srv.URL}
			cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
				return countingTransport{next: rt, n: &requests}
			})
			client, err := NewClient(cfg, ClientOptions{})
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			err = (&Lister{Client: client, RequestTimeout: 100 * time.Millisecond, Retries: 2, Backoff: time.Millisecond}).List(context.Background(), configMapsGVR, "", Selector{}, func(Page) error { return nil }, nil)
			if err == nil || !strings.Contains(err.Error(), "no answer within 100ms (--request-timeout)") {
				t.Fatalf("err = %v", err)
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("took %s", took)
			}
			if n := requests.Load(); n != 3 {
				t.Errorf("%d requests, want 3 (one and two retries)", n)
			}
		})
	}
}

// TestListerHalvesLargePages checks a page over the client's body bound
// is asked again in halves, and that one object over it fails the list
// with a clear error (issue 31: a 200 MB page took 610 MB).
func TestListerHalvesLargePages(t *testing.T) {
	var limits []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		start, _ := strconv.Atoi(r.URL.Query().Get("continue"))
		limits = append(limits, r.URL.Query().Get("limit"))
		size := 1000
		if r.URL.Query().Get("labelSelector") == "huge" {
			size = 100000
		}
		var items []string
		end := min(start+limit, 40)
		for i := start; i < end; i++ {
			items = append(items, fmt.Sprintf(`{"metadata":{"name":"cm-%d","namespace":"ns"},"data":{"k":%q}}`, i, strings.Repeat("x", size)))
		}
		cont := ""
		if end < 40 {
			cont = strconv.Itoa(end)
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"apiVersion":"v1","kind":"ConfigMapList","metadata":{"continue":%q},"items":[%s]}`, cont, strings.Join(items, ","))
	}))
	defer srv.Close()
	client, err := NewClient(&rest.Config{Host: srv.URL}, ClientOptions{MaxPageBytes: 10000})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	err = (&Lister{Client: client, PageSize: 32}).List(context.Background(), configMapsGVR, "", Selector{}, func(p Page) error { n += len(p.Items); return nil }, nil)
	if err != nil || n != 40 {
		t.Fatalf("%d objects, err %v", n, err)
	}
	if got := strings.Join(limits[:4], " "); got != "32 16 8 8" {
		t.Errorf("limits %s, want 32 16 8 8 (then 8)", got)
	}
	err = (&Lister{Client: client, PageSize: 32}).List(context.Background(), configMapsGVR, "", Selector{Label: "huge"}, func(Page) error { return nil }, nil)
	if !errors.Is(err, ErrPageTooLarge) || !strings.Contains(err.Error(), "more than 10000 bytes (--max-page-bytes)") {
		t.Errorf("one object over the bound: err = %v", err)
	}
}

// TestMaxClusterObjects checks the bound on the objects the audit holds
// around the policies: a cluster with more Namespaces than it may hold
// ends the audit with a clear error instead of past its memory limit
// (issue 31: 200,000 Namespaces took 903 MB).
func TestMaxClusterObjects(t *testing.T) {
	opts := loadPolicies(t, "testdata/policies.yaml")
	opts.Lister = &Lister{Client: fakeCluster(t, "testdata/cluster.yaml"), PageSize: 2}
	if _, err := New(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	opts.MaxClusterObjects = 1
	_, err := New(context.Background(), opts)
	if !errors.Is(err, ErrTooManyClusterObjects) || !strings.Contains(err.Error(), "more than 1 (--max-cluster-objects") {
		t.Errorf("err = %v", err)
	}
}

// FuzzBoundedBody holds the page bound: a body up to the bound reads
// whole, a longer one fails with ErrPageTooLarge having read no more than
// the bound.
func FuzzBoundedBody(f *testing.F) {
	f.Add([]byte(`{"items":[]}`), int64(5), uint8(3))
	f.Add([]byte("exactly"), int64(7), uint8(1))
	f.Fuzz(func(t *testing.T, body []byte, max int64, chunk uint8) {
		if max <= 0 || max > 1<<20 {
			return
		}
		r := &boundedReader{r: io.NopCloser(bytes.NewReader(body)), left: max, max: max}
		buf := make([]byte, int(chunk)+1)
		var got []byte
		var err error
		for {
			var n int
			n, err = r.Read(buf)
			got = append(got, buf[:n]...)
			if err != nil {
				break
			}
		}
		if int64(len(body)) <= max {
			if err != io.EOF || !bytes.Equal(got, body) {
				t.Fatalf("body of %d under %d: read %d, err %v", len(body), max, len(got), err)
			}
			return
		}
		if !errors.Is(err, ErrPageTooLarge) || int64(len(got)) > max {
			t.Fatalf("body of %d over %d: read %d, err %v", len(body), max, len(got), err)
		}
	})
}

// countingTransport counts the requests sent through it.
type countingTransport struct {
	next http.RoundTripper
	n    *atomic.Int32
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}
