package audit

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"
)

var configMapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// pagedList answers lists of n ConfigMaps in pages, the continue token
// being the index of the next item; fail, when set, may fail a request
// (given its continue token and how many times it was asked).
type pagedList struct {
	n     int
	fail  func(token string, attempt int) error
	asked map[string]int
	log   []string
}

func (p *pagedList) react(a clienttesting.Action) (bool, runtime.Object, error) {
	opts := a.(clienttesting.ListActionImpl).ListOptions
	p.asked[opts.Continue]++
	p.log = append(p.log, fmt.Sprintf("limit=%d continue=%q", opts.Limit, opts.Continue))
	if p.fail != nil {
		if err := p.fail(opts.Continue, p.asked[opts.Continue]); err != nil {
			return true, nil, err
		}
	}
	start := 0
	if opts.Continue != "" {
		start, _ = strconv.Atoi(opts.Continue)
	}
	list := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMapList"}}
	end := min(start+int(opts.Limit), p.n)
	for i := start; i < end; i++ {
		u := unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind("ConfigMap")
		u.SetNamespace("ns")
		u.SetName(fmt.Sprintf("cm-%03d", i))
		list.Items = append(list.Items, u)
	}
	if end < p.n {
		list.SetContinue(strconv.Itoa(end))
		remaining := int64(p.n - end)
		list.SetRemainingItemCount(&remaining)
	}
	return true, list, nil
}

func listAll(t *testing.T, p *pagedList, l *Lister) ([]string, []int64, int, error) {
	t.Helper()
	client := fakeCluster(t)
	p.asked = map[string]int{}
	client.PrependReactor("list", "configmaps", p.react)
	l.Client = client
	var names []string
	var remaining []int64
	retries := 0
	// The fake client keeps the limit and the continue token of
	// namespaced lists only.
	err := l.List(context.Background(), configMapsGVR, "ns", Selector{}, func(pg Page) error {
		for _, u := range pg.Items {
			names = append(names, u.GetName())
		}
		remaining = append(remaining, pg.Remaining)
		return nil
	}, func(error, time.Duration) { retries++ })
	return names, remaining, retries, err
}

func TestListerPages(t *testing.T) {
	p := &pagedList{n: 7}
	names, remaining, _, err := listAll(t, p, &Lister{PageSize: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 7 || names[0] != "cm-000" || names[6] != "cm-006" {
		t.Errorf("names = %v", names)
	}
	if fmt.Sprint(remaining) != "[4 1 -1]" {
		t.Errorf("remaining = %v", remaining)
	}
	if fmt.Sprint(p.log) != `[limit=3 continue="" limit=3 continue="3" limit=3 continue="6"]` {
		t.Errorf("requests = %v", p.log)
	}
}

func TestListerRetries(t *testing.T) {
	busy := apierrors.NewTooManyRequests("busy", 1)
	internal := apierrors.NewInternalError(errors.New("etcd leader changed"))
	cases := []struct {
		name    string
		fail    func(token string, attempt int) error
		retries int
		wantErr string
		// wantLog: the requests, showing the list resumed from the token.
		wantLog string
	}{
		{
			name: "a failing page is asked again from its continue token",
			fail: func(token string, attempt int) error {
				if token == "3" && attempt <= 2 {
					return internal
				}
				return nil
			},
			retries: 2,
			wantLog: `[limit=3 continue="" limit=3 continue="3" limit=3 continue="3" limit=3 continue="3" limit=3 continue="6"]`,
		},
		{
			name: "429 is retried",
			fail: func(token string, attempt int) error {
				if token == "" && attempt == 1 {
					return busy
				}
				return nil
			},
			retries: 1,
		},
		{
			name: "a broken connection is retried",
			fail: func(token string, attempt int) error {
				if token == "6" && attempt == 1 {
					return &netError{}
				}
				return nil
			},
			retries: 1,
		},
		{
			name:    "retries run out",
			fail:    func(token string, _ int) error { return internal },
			retries: 3,
			wantErr: "listing configmaps/v1 in namespace ns: Internal error occurred: etcd leader changed",
		},
		{
			name: "a refusal is not retried",
			fail: func(string, int) error {
				return apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "", errors.New("RBAC"))
			},
			wantErr: `listing configmaps/v1 in namespace ns: configmaps is forbidden: RBAC`,
		},
		{
			name: "an expired continue token goes on from the token of the 410",
			fail: func(token string, _ int) error {
				if token == "3" {
					e := apierrors.NewResourceExpired("The provided continue parameter is too old")
					e.ErrStatus.ListMeta.Continue = "4"
					return e
				}
				return nil
			},
			retries: 1,
			wantLog: `[limit=3 continue="" limit=3 continue="3" limit=3 continue="4"]`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := &pagedList{n: 7, fail: c.fail}
			names, _, retries, err := listAll(t, p, &Lister{PageSize: 3, Retries: 3, Backoff: time.Millisecond})
			if c.wantErr != "" {
				if err == nil || err.Error() != c.wantErr {
					t.Fatalf("err = %v, want %s", err, c.wantErr)
				}
				if retries != c.retries {
					t.Errorf("%d retries, want %d", retries, c.retries)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if retries != c.retries {
				t.Errorf("%d retries, want %d", retries, c.retries)
			}
			want := 7
			if c.wantLog != "" && c.wantLog[len(c.wantLog)-4:] == `"4"]` {
				want = 6 // cm-003 is skipped by the token of the 410 (it is past it)
			}
			if len(names) != want {
				t.Errorf("names = %v", names)
			}
			if c.wantLog != "" && fmt.Sprint(p.log) != c.wantLog {
				t.Errorf("requests = %v\nwant       %v", p.log, c.wantLog)
			}
		})
	}
}

type netError struct{}

func (*netError) Error() string { return "connection reset by peer" }

func TestListerStopsWithContext(t *testing.T) {
	client := fakeCluster(t)
	client.PrependReactor("list", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("down")
	})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := (&Lister{Client: client, Retries: 100, Backoff: 20 * time.Millisecond}).List(ctx, configMapsGVR, "", Selector{}, func(Page) error { return nil }, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("took %s", time.Since(start))
	}
}

func TestClientIsReadOnly(t *testing.T) {
	var requests atomic.Int32
	var agent atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		agent.Store(r.UserAgent())
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"apiVersion":"v1","kind":"ConfigMapList","metadata":{},"items":[{"metadata":{"name":"a","namespace":"ns"}}]}`)
	}))
	defer srv.Close()
	client, err := NewClient(&rest.Config{Host: srv.URL}, ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	list, err := client.Resource(configMapsGVR).List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 || list.Items[0].GetKind() != "ConfigMap" {
		t.Fatalf("list: %v %v", list, err)
	}
	if agent.Load() != DefaultUserAgent {
		t.Errorf("user agent %q", agent.Load())
	}
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "b"}}}
	writes := map[string]func() error{
		"create": func() error {
			_, err := client.Resource(configMapsGVR).Namespace("ns").Create(ctx, cm, metav1.CreateOptions{})
			return err
		},
		"update": func() error {
			_, err := client.Resource(configMapsGVR).Namespace("ns").Update(ctx, cm, metav1.UpdateOptions{})
			return err
		},
		"delete": func() error {
			return client.Resource(configMapsGVR).Namespace("ns").Delete(ctx, "a", metav1.DeleteOptions{})
		},
		"patch": func() error {
			_, err := client.Resource(configMapsGVR).Namespace("ns").Patch(ctx, "a", "application/merge-patch+json", []byte(`{}`), metav1.PatchOptions{})
			return err
		},
		"deletecollection": func() error {
			return client.Resource(configMapsGVR).Namespace("ns").DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		},
	}
	for name, write := range writes {
		t.Run(name+" is refused before it is sent", func(t *testing.T) {
			before := requests.Load()
			err := write()
			var w *ErrWrite
			if !errors.As(err, &w) {
				t.Fatalf("err = %v, want ErrWrite", err)
			}
			if requests.Load() != before {
				t.Errorf("the request reached the server")
			}
		})
	}
}

func TestListerRefusesAStuckContinueToken(t *testing.T) {
	client := fakeCluster(t)
	client.PrependReactor("list", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		list := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMapList"}}
		list.SetContinue("same")
		return true, list, nil
	})
	err := (&Lister{Client: client}).List(context.Background(), configMapsGVR, "ns", Selector{}, func(Page) error { return nil }, nil)
	if err == nil || err.Error() != "listing configmaps/v1 in namespace ns: the API server returned the continue token it was given" {
		t.Errorf("err = %v", err)
	}
}

func TestClientCompression(t *testing.T) {
	var encoding atomic.Value
	// Over TLS, as an API server answers: client-go's plain-HTTP transport
	// is http.DefaultTransport, which always asks for gzip.
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		encoding.Store(r.Header.Get("Accept-Encoding"))
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"apiVersion":"v1","kind":"ConfigMapList","metadata":{},"items":[]}`)
	}))
	defer srv.Close()
	for _, c := range []struct {
		name string
		opts ClientOptions
		want string
	}{
		{"pages are asked compressed by default", ClientOptions{}, "gzip"},
		{"DisableCompression asks them uncompressed", ClientOptions{DisableCompression: true}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			client, err := NewClient(&rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := client.Resource(configMapsGVR).List(context.Background(), metav1.ListOptions{}); err != nil {
				t.Fatal(err)
			}
			if got := encoding.Load(); got != c.want {
				t.Errorf("Accept-Encoding %q, want %q", got, c.want)
			}
		})
	}
}
