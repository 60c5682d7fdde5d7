package audit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
)

// streamServer answers every list with one page of n ConfigMaps whose
// data is size bytes, written as it is generated (the server holds one
// item at a time); before item i it calls before(i, w) when set.
func streamServer(t *testing.T, n, size int, before func(r *http.Request, i int, w http.ResponseWriter)) *httptest.Server {
	t.Helper()
	value := strings.Repeat("x", size)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"7"},"items":[`)
		for i := range n {
			if before != nil {
				before(r, i, w)
			}
			if i > 0 {
				fmt.Fprint(w, ",")
			}
			fmt.Fprintf(w, `{"metadata":{"name":"cm-%06d","namespace":"ns"},"data":{"k":%q}}`, i, value)
		}
		fmt.Fprint(w, `]}`)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func streamLister(t *testing.T, srv *httptest.Server, o ClientOptions) *Lister {
	t.Helper()
	o.QPS, o.Burst = 1000, 1000
	client, err := NewClient(&rest.Config{Host: srv.URL}, o)
	if err != nil {
		t.Fatal(err)
	}
	return &Lister{Client: client, Backoff: time.Millisecond}
}

// TestListerStreamsItems checks the Lister hands a page's first items on
// before the API server has finished the page (issue 31: pages were held
// whole; without streaming the first items come only with the page's end,
// after the server gave up waiting here).
func TestListerStreamsItems(t *testing.T) {
	first := make(chan struct{})
	var waited atomic.Bool
	srv := streamServer(t, 3*streamChunk, 10, func(_ *http.Request, i int, w http.ResponseWriter) {
		if i != 2*streamChunk {
			return
		}
		w.(http.Flusher).Flush()
		// Without streaming the first items come only after this wait,
		// whatever its length; a minute leaves a process starved under
		// -race on a loaded machine the time to decode them.
		select {
		case <-first:
		case <-time.After(time.Minute):
			waited.Store(true)
		}
	})
	var got, calls int
	err := streamLister(t, srv, ClientOptions{}).List(context.Background(), configMapsGVR, "", Selector{}, func(p Page) error {
		if calls == 0 {
			close(first)
		}
		calls++
		got += len(p.Items)
		return nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if waited.Load() {
		t.Error("no item was handed on before the page ended")
	}
	if got != 3*streamChunk || calls != 3 {
		t.Errorf("%d items in %d calls, want %d in 3", got, calls, 3*streamChunk)
	}
}

// TestListerStreamMemory lists a 48 MB page with no page bound
// (--max-page-bytes -1): the heap in use while its items are handed on
// stays far under the page's size (issue 31: a 200 MB page took 610 MB).
func TestListerStreamMemory(t *testing.T) {
	const n, size = 4000, 12000 // 48 MB
	srv := streamServer(t, n, size, nil)
	l := streamLister(t, srv, ClientOptions{MaxPageBytes: -1})
	// The heap's live bytes as of the last collection (not HeapInuse, which
	// also counts the garbage a starved collector has not yet reclaimed:
	// under -race on a loaded machine that alone passed 20 MB): a held
	// page is live at every collection the 48 MB of reading bring about.
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	runtime.GC()
	metrics.Read(live)
	base, peak := live[0].Value.Uint64(), live[0].Value.Uint64()
	got := 0
	err := l.List(context.Background(), configMapsGVR, "", Selector{}, func(p Page) error {
		got += len(p.Items)
		metrics.Read(live)
		peak = max(peak, live[0].Value.Uint64())
		return nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got != n {
		t.Fatalf("%d items, want %d", got, n)
	}
	grew := int64(peak) - int64(base)
	t.Logf("live heap grew by %.1f MB for a %.0f MB page", float64(grew)/1e6, float64(n*size)/1e6)
	if grew > 20e6 {
		t.Errorf("live heap grew by %d bytes: the page was held", grew)
	}
}

// TestListerStreamRetrySkipsHandedItems checks a page that breaks off
// after some of its items were handed on is asked again and those items
// are not handed on twice; and that an error of the caller ends the list
// as it is, without a retry.
func TestListerStreamRetrySkipsHandedItems(t *testing.T) {
	var requests atomic.Int32
	const n = 3*streamChunk + 10
	srv := streamServer(t, n, 10, func(r *http.Request, i int, w http.ResponseWriter) {
		if i == 0 {
			requests.Add(1)
		}
		if i == 2*streamChunk+5 && requests.Load() == 1 {
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler) // the connection breaks
		}
	})
	var names []string
	retries := 0
	err := streamLister(t, srv, ClientOptions{}).List(context.Background(), configMapsGVR, "", Selector{}, func(p Page) error {
		for _, u := range p.Items {
			names = append(names, u.GetName())
			if u.GetKind() != "ConfigMap" || u.GetAPIVersion() != "v1" {
				t.Errorf("%s: %s %s", u.GetName(), u.GetAPIVersion(), u.GetKind())
			}
		}
		return nil
	}, func(error, time.Duration) { retries++ })
	if err != nil {
		t.Fatal(err)
	}
	if retries != 1 || requests.Load() != 2 {
		t.Errorf("%d retries, %d requests; want 1 and 2", retries, requests.Load())
	}
	if len(names) != n {
		t.Fatalf("%d items, want %d", len(names), n)
	}
	for i, name := range names {
		if want := fmt.Sprintf("cm-%06d", i); name != want {
			t.Fatalf("item %d is %s, want %s", i, name, want)
		}
	}

	stop := errors.New("enough")
	requests.Store(5)
	err = streamLister(t, srv, ClientOptions{}).List(context.Background(), configMapsGVR, "", Selector{}, func(Page) error { return stop }, nil)
	if err != stop || requests.Load() != 6 {
		t.Errorf("err = %v after %d requests, want the caller's after one", err, requests.Load()-5)
	}
}

// TestListerStreamPages checks the streamed list's pages, continue
// tokens and remaining counts, and the page bound's halving, against a
// server that pages 40 ConfigMaps.
func TestListerStreamPages(t *testing.T) {
	var limits []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		start, _ := strconv.Atoi(r.URL.Query().Get("continue"))
		limits = append(limits, r.URL.Query().Get("limit"))
		var items []string
		end := min(start+limit, 40)
		for i := start; i < end; i++ {
			items = append(items, fmt.Sprintf(`{"metadata":{"name":"cm-%02d","namespace":"ns"},"data":{"k":%q}}`, i, strings.Repeat("x", 1000)))
		}
		meta := `{}`
		if end < 40 {
			meta = fmt.Sprintf(`{"continue":"%d","remainingItemCount":%d}`, end, 40-end)
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"apiVersion":"v1","kind":"ConfigMapList","metadata":%s,"items":[%s]}`, meta, strings.Join(items, ","))
	}))
	defer srv.Close()
	l := streamLister(t, srv, ClientOptions{MaxPageBytes: 10000})
	l.PageSize = 16
	var names []string
	var remaining []int64
	err := l.List(context.Background(), configMapsGVR, "", Selector{}, func(p Page) error {
		for _, u := range p.Items {
			names = append(names, u.GetName())
		}
		remaining = append(remaining, p.Remaining)
		return nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 40 || names[0] != "cm-00" || names[39] != "cm-39" {
		t.Errorf("names %v", names)
	}
	for i := 1; i < len(names); i++ {
		if names[i] <= names[i-1] {
			t.Fatalf("names out of order or twice: %v", names)
		}
	}
	// 16 items are 16 KB, over the 10,000-byte bound: the page is asked
	// again at 8, and the rest of the list in pages of 8.
	if want := "16 8 8 8 8 8"; strings.Join(limits, " ") != want {
		t.Errorf("limits %v, want %s", limits, want)
	}
	if want := []int64{32, 24, 16, 8, -1}; !reflect.DeepEqual(remaining, want) {
		t.Errorf("remaining %v, want %v", remaining, want)
	}
}

// FuzzListStream holds decodeListStream to listDecodeFast (itself held to
// client-go's decoder by FuzzListDecode): whatever the stream decodes is
// a well-formed list with the same items, continue token and remaining
// count; a well-formed list it refuses has a key twice.
func FuzzListStream(f *testing.F) {
	f.Add(page("Pod", "v1", pagePod, 2))
	f.Add(page("Deployment", "apps/v1", pageDeployment, 2))
	f.Add([]byte(`{"kind":"PodList","apiVersion":"v1","metadata":{"continue":"c","remainingItemCount":3},"items":[{"kind":5},{"a":[1,2.5,null]}]}`))
	f.Add([]byte(`{"items":[{"a":1}],"kind":"PodList","apiVersion":"v1","metadata":{"continue":5}}`))
	f.Add([]byte(`{"Kind":"PodList","apiVersion":"v1","items":[]}`))
	f.Add([]byte(`{"kind":"PodList","apiVersion":"v1","items":[],"items":[{}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var items []unstructured.Unstructured
		var meta listMeta
		err := decodeListStream(bytes.NewReader(data), &meta, func(u unstructured.Unstructured) error {
			items = append(items, u)
			return nil
		})
		var list unstructured.UnstructuredList
		fast := listDecodeFast(data, &list)
		if err != nil {
			if !errors.Is(err, ErrNotAList) {
				t.Fatalf("error not ErrNotAList: %v", err)
			}
			if fast && !strings.Contains(err.Error(), "twice") {
				t.Fatalf("the stream refused a list the client decodes: %v", err)
			}
			return
		}
		if !fast {
			t.Fatalf("the stream took what the client does not decode fast: %q", data)
		}
		if len(items) == 0 && len(list.Items) == 0 {
			items = list.Items
		}
		if !reflect.DeepEqual(items, list.Items) {
			t.Fatalf("items differ:\nstream %v\nclient %v", items, list.Items)
		}
		remaining := int64(-1)
		if r := list.GetRemainingItemCount(); r != nil {
			remaining = *r
		}
		if meta.Continue != list.GetContinue() || meta.Remaining != remaining {
			t.Fatalf("meta %+v, client continue %q remaining %d", meta, list.GetContinue(), remaining)
		}
	})
}
