package jsonpatch

import (
	"os"
	"testing"

	sigsjson "sigs.k8s.io/json"
)

// BenchmarkCreatePatch is the webhook's answer to one review of the load
// fixture (test/load: testdata/pod.yaml and its 20 policies): the patch from
// the request's object (testdata/load-pod.json, as the review carries it) to the mutated one, which shares its unchanged
// parts with it (Apply of the 30 operations the policies make,
// testdata/load-pod-patch.json, shares them as the engine does).
func BenchmarkCreatePatch(b *testing.B) {
	j, orig, want, p := loadReview(b)
	patch, err := CreatePatch(j, orig, want)
	if err != nil || string(patch)+"\n" != string(p) && string(patch) != string(p) {
		b.Fatalf("patch %s (%v), want %s", patch, err, p)
	}
	if !IsNormalized(orig) {
		b.Fatal("the load Pod is not normalized")
	}
	benchCreatePatch(b, j, orig, want)
}

// benchCreatePatch runs CreatePatch (impl=checked-by-apply),
// CreatePatchNormalized (impl=checked-normalized: what the webhook runs
// for a request object its decoder vouches for) and AppendPatchIn
// (impl=in-scratch) from orig, the decoding of j, to want.
func benchCreatePatch(b *testing.B, j []byte, orig, want map[string]any) {
	for _, impl := range []struct {
		name string
		f    func([]byte, map[string]any, map[string]any) ([]byte, error)
	}{{"checked-by-apply", CreatePatch}, {"checked-normalized", CreatePatchNormalized}} {
		b.Run("impl="+impl.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := impl.f(j, orig, want); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	// impl=in-scratch: AppendPatchIn as the webhook calls it, one scratch
	// and the last patch's room reused from review to review.
	b.Run("impl=in-scratch", func(b *testing.B) {
		b.ReportAllocs()
		var w Scratch
		var room []byte
		for b.Loop() {
			patch, err := AppendPatchIn(&w, room, j, orig, want, true)
			if err != nil {
				b.Fatal(err)
			}
			room = patch
		}
	})
}

// BenchmarkCreatePatchListEdits is the webhook's answer when the
// mutations insert and remove list items of the load fixture's Pod (a
// sidecar put first, an env var inserted, a toleration removed): a patch
// of inserts and removes, which CreatePatchNormalized vouches for without
// applying it (patchGives).
func BenchmarkCreatePatchListEdits(b *testing.B) {
	j, orig := loadPod(b)
	ops := []Operation{
		{Op: "add", Path: "/spec/containers/0", Value: map[string]any{"name": "proxy", "image": "envoy:1.30"}, HasValue: true},
		{Op: "add", Path: "/spec/containers/1/env/1", Value: map[string]any{"name": "ZONE", "value": "a"}, HasValue: true},
		{Op: "remove", Path: "/spec/tolerations/0"},
	}
	want, err := Apply(orig, ops)
	if err != nil {
		b.Fatal(err)
	}
	if !patchGives(orig, want, Diff(orig, want)) {
		b.Fatal("patchGives does not vouch for the patch")
	}
	benchCreatePatch(b, j, orig, want)
}

// loadReview is the load fixture's Pod as the review carries it (loadPod),
// the object the 30 operations of its policies leave
// (testdata/load-pod-patch.json applied), and those operations' bytes.
func loadReview(tb testing.TB) (j []byte, orig, want map[string]any, p []byte) {
	j, orig = loadPod(tb)
	p, err := os.ReadFile("testdata/load-pod-patch.json")
	if err != nil {
		tb.Fatal(err)
	}
	ops, err := opsFromJSON(p)
	if err != nil {
		tb.Fatal(err)
	}
	if want, err = Apply(orig, ops); err != nil {
		tb.Fatal(err)
	}
	return j, orig, want, p
}

// loadPod is the load fixture's Pod as the review carries it
// (testdata/load-pod.json) and decoded.
func loadPod(tb testing.TB) ([]byte, map[string]any) {
	j, err := os.ReadFile("testdata/load-pod.json")
	if err != nil {
		tb.Fatal(err)
	}
	var orig map[string]any
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(j, &orig); err != nil {
		tb.Fatal(err)
	}
	return j, orig
}
