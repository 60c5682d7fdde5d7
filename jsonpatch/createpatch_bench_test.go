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
	j, err := os.ReadFile("testdata/load-pod.json")
	if err != nil {
		b.Fatal(err)
	}
	var orig map[string]any
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(j, &orig); err != nil {
		b.Fatal(err)
	}
	p, err := os.ReadFile("testdata/load-pod-patch.json")
	if err != nil {
		b.Fatal(err)
	}
	ops, err := opsFromJSON(p)
	if err != nil {
		b.Fatal(err)
	}
	want, err := Apply(orig, ops)
	if err != nil {
		b.Fatal(err)
	}
	patch, err := CreatePatch(j, orig, want)
	if err != nil || string(patch)+"\n" != string(p) && string(patch) != string(p) {
		b.Fatalf("patch %s (%v), want %s", patch, err, p)
	}
	if !IsNormalized(orig) {
		b.Fatal("the load Pod is not normalized")
	}
	// impl=checked-normalized is what the webhook runs for a request
	// object its decoder vouches for (CreatePatchNormalized).
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
}
