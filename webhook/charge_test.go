package webhook

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// podReview is a CREATE review of a Pod with n containers.
func podReview(n int, container func(i int) string) []byte {
	var b strings.Builder
	b.WriteString(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u1","kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},"namespace":"shop","operation":"CREATE","userInfo":{"username":"alice"},"object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"shop"},"spec":{"containers":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(container(i))
	}
	b.WriteString(`]}}}}`)
	return []byte(b.String())
}

// configMapReview is a CREATE review of a ConfigMap of n keys of size bytes.
func configMapReview(n, size int) []byte {
	var b strings.Builder
	b.WriteString(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u1","kind":{"group":"","version":"v1","kind":"ConfigMap"},"resource":{"group":"","version":"v1","resource":"configmaps"},"namespace":"shop","operation":"CREATE","userInfo":{"username":"alice"},"object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"shop"},"data":{`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%d":"%s"`, i, strings.Repeat("x", size))
	}
	b.WriteString(`}}}}`)
	return []byte(b.String())
}

// The shapes of the charge tests: containers as a client may send them
// (minimal: kube-apiserver never sends these), as kube-apiserver sends them
// (defaulted), and strings.
var (
	minimalContainer   = func(i int) string { return fmt.Sprintf(`{"name":"c%d","image":"i"}`, i) }
	defaultedContainer = func(i int) string {
		return fmt.Sprintf(`{"name":"c%d","image":"i","resources":{},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"Always"}`, i)
	}
	envContainer = func(int) string {
		return `{"name":"c","image":"i","terminationMessagePolicy":"File","env":[` + strings.Repeat(`{"name":"e","value":"v"},`, 8000) + `{"name":"e","value":"v"}]}`
	}
)

// heapPeak samples the heap while f runs, with the collector kept close to
// the live heap, and returns the highest heap seen above the one before.
func heapPeak(f func()) int64 {
	defer debug.SetGCPercent(debug.SetGCPercent(5))
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var peak atomic.Uint64
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > peak.Load() {
				peak.Store(m.HeapAlloc)
			}
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Microsecond):
			}
		}
	}()
	f()
	close(stop)
	<-done
	return int64(peak.Load()) - int64(base)
}

// TestReviewChargeCoversItsCost measures the peak heap of reviews of each
// shape, decoded, evaluated by the engine of testdata/ and answered, and
// holds ReviewCharge to at least it (the budget bounds the memory) and, for
// the shapes kube-apiserver sends, to at most a few times it (the budget
// is not spent on memory no review uses: 3 MiB of strings was charged 16
// times its size).
func TestReviewChargeCoversItsCost(t *testing.T) {
	w := newWorld(t)
	s := newServer(t, w, newTLS(t), func(o *Options) { o.MaxRequestBytes = 8 << 20; o.MaxBodyBytesInFlight = -1 })
	cases := []struct {
		name string
		body []byte
		// most is the most the charge may be, in times the measured peak
		// (0: not bounded: a shape kube-apiserver does not send) or, for
		// bodyTimes, in times the body.
		most, bodyTimes float64
	}{
		{name: "a Pod of 3,000 containers without defaults", body: podReview(3000, minimalContainer)},
		{name: "a Pod of 3,000 empty containers", body: podReview(3000, func(int) string { return "{}" })},
		{name: "a Pod of 3,000 defaulted containers", body: podReview(3000, defaultedContainer), most: 5},
		{name: "a container of 8,000 env entries", body: podReview(1, envContainer), most: 5},
		{name: "a ConfigMap of three 1 MiB strings", body: configMapReview(3, 1<<20), bodyTimes: 3.1},
		{name: "a ConfigMap of 3,000 keys of 1,000 bytes", body: configMapReview(3000, 1000), bodyTimes: 3.5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			charge := ReviewCharge(tc.body)
			// Two runs: a sampled peak is noisy both ways (what else the
			// process allocates meanwhile and the garbage collector's
			// timing add to it; a sample may miss a short peak), so the
			// charge must cover the lesser and stay within bounds of the
			// greater.
			var peak, most int64
			for i := 0; i < 2; i++ {
				var code int
				p := heapPeak(func() {
					code = serveOnce(s.Handler(), http.MethodPost, PathMutate, "application/json", tc.body).Code
				})
				if code != http.StatusOK {
					t.Fatalf("HTTP %d", code)
				}
				if i == 0 || p < peak {
					peak = p
				}
				most = max(most, p)
			}
			t.Logf("body %d bytes, peak heap %d, charge %d (%.1f times the peak, %.1f times the body)", len(tc.body), peak, charge, float64(charge)/float64(peak), float64(charge)/float64(len(tc.body)))
			if peak > charge {
				t.Errorf("the review peaked at %d bytes of heap, more than its charge of %d", peak, charge)
			}
			if tc.most > 0 && float64(charge) > tc.most*float64(most) {
				t.Errorf("charge %d is more than %.0f times the peak %d", charge, tc.most, most)
			}
			if tc.bodyTimes > 0 && float64(charge) > tc.bodyTimes*float64(len(tc.body)) {
				t.Errorf("charge %d is more than %.1f times the body (%d bytes)", charge, tc.bodyTimes, len(tc.body))
			}
		})
	}
}

// TestConcurrentReviewsStayWithinTheBudget: clients sending at once Pods of
// containers without defaults (the attack: 80 times their body in memory),
// Pods as kube-apiserver sends them and ConfigMaps of strings never take
// the heap past the budget; the excess is refused with 429. Charged 16
// times its body, each attack review took five times its charge.
func TestConcurrentReviewsStayWithinTheBudget(t *testing.T) {
	const budget = 24 << 20
	w := newWorld(t)
	s := newServer(t, w, newTLS(t), func(o *Options) { o.MaxBodyBytesInFlight = budget })
	attack := podReview(3000, minimalContainer)
	bodies := [][]byte{attack, attack, podReview(3000, defaultedContainer), configMapReview(1, 1<<20)}
	codes := make([]atomic.Int64, 600)
	peak := heapPeak(func() {
		var wg sync.WaitGroup
		for c := range 24 {
			wg.Go(func() {
				for range 3 {
					codes[serveOnce(s.Handler(), http.MethodPost, PathMutate, "application/json", bodies[c%len(bodies)]).Code].Add(1)
				}
			})
		}
		wg.Wait()
	})
	t.Logf("peak heap %d bytes; 200: %d, 429: %d, 413: %d", peak, codes[200].Load(), codes[429].Load(), codes[413].Load())
	if codes[200].Load() == 0 {
		t.Error("no review was answered")
	}
	// The charge is an estimate with a margin; the heap also holds the
	// bodies (in the test, not the server) and the collector's slack.
	if limit := int64(budget + 4<<20); peak > limit {
		t.Errorf("the heap peaked at %d bytes with a budget of %d (limit %d)", peak, budget, limit)
	}
}

// TestTheLargestRealReviewFits: reviews of --max-request-bytes of the
// densest shapes kube-apiserver sends fit the default budget, and 3 MiB of
// containers without defaults (the attack) is more than it: refused with
// 413 before it is decoded.
func TestTheLargestRealReviewFits(t *testing.T) {
	const limit = DefaultMaxRequestBytes
	fill := func(container func(int) string, perItem int) []byte {
		return podReview((limit-600)/perItem, container)
	}
	entries := func(n int) []byte {
		return podReview(1, func(int) string {
			return `{"name":"c","image":"i","terminationMessagePolicy":"File","env":[` + strings.Repeat(`{"name":"e","value":"v"},`, n) + `{"name":"e","value":"v"}]}`
		})
	}
	for _, tc := range []struct {
		name string
		body []byte
		fits bool
	}{
		{"defaulted containers", fill(defaultedContainer, len(defaultedContainer(10000))+1), true},
		{"env entries", entries((limit - 700) / 25), true},
		{"containers without defaults", fill(minimalContainer, len(minimalContainer(10000))+1), false},
	} {
		if len(tc.body) > limit {
			t.Fatalf("%s: %d bytes, over the limit", tc.name, len(tc.body))
		}
		charge, budget := ReviewCharge(tc.body), int64(DefaultBodyBudgetFactor*limit)
		if fits := charge <= budget; fits != tc.fits {
			t.Errorf("%s: %d bytes charged %d against the default budget %d; want fits=%v", tc.name, len(tc.body), charge, budget, tc.fits)
		}
	}
}

// TestVariableBytesAreBounded: a policy whose variables double a string
// to 1 GiB at a runtime cost of about 200 is stopped at the server's bound
// (the policy's failurePolicy, Fail: a denial naming it) with the heap
// well under the GiB.
func TestVariableBytesAreBounded(t *testing.T) {
	w := newWorldOf(t, "testdata/doubling.yaml", "testdata/resources.yaml")
	s := newServer(t, w, newTLS(t), func(o *Options) { o.MaxVariableBytes = 4 << 20 })
	var rec *httptest.ResponseRecorder
	peak := heapPeak(func() {
		rec = serveOnce(s.Handler(), http.MethodPost, PathMutate, "application/json", []byte(minimalReview))
	})
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `more than the bound of 4194304 bytes per evaluation (mutatis serve --max-variable-bytes)`) || !strings.Contains(rec.Body.String(), `"allowed":false`) {
		t.Errorf("HTTP %d %s, want a denial naming the bound", rec.Code, rec.Body)
	}
	if peak > 64<<20 {
		t.Errorf("the heap peaked at %d bytes", peak)
	}
}
