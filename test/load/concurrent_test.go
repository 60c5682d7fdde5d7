package load

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestConcurrentReviewsGetTheirOwnResponses sends reviews of different pods
// (other containers, labels, grace period: other variables, matchConditions
// and patches) to one handler from several goroutines at once, and checks
// that each gets the response it gets alone. The evaluation reuses released
// activations (compiler.Activation.Release) across reviews: one still in use,
// or reused while something holds it, shows as another review's response.
// Run it with -race.
func TestConcurrentReviewsGetTheirOwnResponses(t *testing.T) {
	ctx := context.Background()
	h, base := fixtureHandler(ctx, t)
	variants := []func(*unstructured.Unstructured){
		func(*unstructured.Unstructured) {},
		func(o *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(o.Object, "environment-set", "metadata", "labels", "environment")
		},
		func(o *unstructured.Unstructured) {
			cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "containers")
			extra := map[string]any{"name": "helper", "image": "docker.io/library/busybox:1.36"}
			_ = unstructured.SetNestedSlice(o.Object, append(cs, extra), "spec", "containers")
		},
		func(o *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(o.Object, int64(90), "spec", "terminationGracePeriodSeconds")
			o.SetName("other-7d9c8b6f5-abcde")
		},
	}
	send := func(body []byte) string {
		rec := postReview(ctx, h, body)
		return fmt.Sprintf("HTTP %d: %s", rec.Code, rec.Body.String())
	}
	var bodies [][]byte
	var want []string
	for _, v := range variants {
		obj := base.DeepCopy()
		v(obj)
		reviews, err := NewReviews(obj, nil)
		if err != nil {
			t.Fatal(err)
		}
		body := reviews.Body(reviews.UID(0))
		bodies = append(bodies, body)
		want = append(want, send(body))
	}
	for i := range want {
		for j := range i {
			if want[i] == want[j] {
				t.Fatalf("variants %d and %d have the same response: the test cannot tell them apart", j, i)
			}
		}
	}
	var wg sync.WaitGroup
	errs := make([]string, 6)
	for g := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 12 {
				k := (g + i) % len(bodies)
				if got := send(bodies[k]); got != want[k] {
					errs[g] = fmt.Sprintf("variant %d: got %s\nwant %s", k, got, want[k])
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, e := range errs {
		if e != "" {
			t.Error(e)
		}
	}
}
