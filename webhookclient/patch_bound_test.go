package webhookclient

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	evanphx "gopkg.in/evanphx/json-patch.v4"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/internal/jsonvalue"
	"github.com/mutatis-dev/mutatis/scheme"
	"github.com/mutatis-dev/mutatis/test/webhookserver"
)

// TestPatchBoundedByRequest (docs/reliability.md W12): a webhook answering
// 150,000 `add` operations into a list — minutes of evanphx/json-patch
// inserts, as kube-apiserver applies them — is stopped when the request's
// deadline passes, as a timeout of that webhook: under Fail a 500 naming
// the webhook, the operations applied and the bound; under Ignore the
// call fails open and the pass ends with kube-apiserver's 504.
func TestPatchBoundedByRequest(t *testing.T) {
	if testing.Short() {
		t.Skip("a 150,000-operation patch")
	}
	f := newFixture(t)
	for _, tc := range []struct {
		name    string
		opts    []func(*admissionregistrationv1.MutatingWebhook)
		code    int32
		outcome chain.CallOutcome
	}{
		{name: "fail", code: 500, outcome: chain.FailedClosed},
		{name: "ignore", opts: []func(*admissionregistrationv1.MutatingWebhook){ignorePolicy}, code: 504, outcome: chain.FailedOpen},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := f.dispatcher(t, Options{}, f.hook("inserts.example.com", webhookserver.PathInserts+"/150000", tc.opts...))
			// Long enough for the HTTP exchange of the 12 MB answer, far
			// too short for the application.
			ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
			defer cancel()
			res, err := d.pass(ctx, podAttributes(t, nil), &reinvocation{}, false)
			if len(res.Calls) == 1 && res.Calls[0].Err != nil && strings.Contains(res.Calls[0].Err.Error(), "failed to call webhook") {
				t.Skipf("the HTTP exchange itself did not end before the deadline on this machine: %v", res.Calls[0].Err)
			}
			var status *apierrors.StatusError
			if !errors.As(err, &status) || status.ErrStatus.Code != tc.code {
				t.Fatalf("error %v, want a %d", err, tc.code)
			}
			if len(res.Calls) != 1 || res.Calls[0].Outcome != tc.outcome {
				t.Fatalf("calls %+v", res.Calls)
			}
			var interrupted *PatchInterrupted
			if !errors.As(res.Calls[0].Err, &interrupted) || interrupted.Total != 150000 || interrupted.Applied >= 150000 || !errors.Is(interrupted, context.DeadlineExceeded) {
				t.Fatalf("call error %v, want the patch interrupted", res.Calls[0].Err)
			}
			t.Logf("%d of 150000 operations applied at the deadline", interrupted.Applied)
			want := fmt.Sprintf(`failed calling webhook "inserts.example.com": applying the webhook's JSON patch stopped after %d of 150000 operations: the request's deadline passed`, interrupted.Applied)
			if msg := res.Calls[0].Err.Error(); !strings.HasPrefix(msg, want) {
				t.Errorf("message %q, want it to start %q", msg, want)
			}
			if tc.code == 500 && !strings.Contains(err.Error(), want) {
				t.Errorf("refusal %q does not say %q", err, want)
			}
		})
	}
}

// TestApplyPatchCancelled: a request already ended applies nothing.
func TestApplyPatchCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	obj := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c"}}
	p, err := evanphx.DecodePatch([]byte(`[{"op":"add","path":"/data","value":{}}]`))
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = ApplyPatch(ctx, scheme.New(), obj, corev1.SchemeGroupVersion.WithKind("ConfigMap"), p)
	var interrupted *PatchInterrupted
	if !errors.As(err, &interrupted) || interrupted.Applied != 0 || interrupted.Total != 1 || !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v", err)
	}
	if want := "applying the webhook's JSON patch stopped after 0 of 1 operations: the request was cancelled (context canceled)"; err.Error() != want {
		t.Errorf("message %q, want %q", err, want)
	}
}

// endedContext's Done is closed while its Err is still nil: the
// request ends right after the application began.
type endedContext struct{ context.Context }

func (endedContext) Done() <-chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

func (endedContext) Err() error { return nil }

// TestApplyPatchBoundsObservedNulls: a patch whose first slice must be
// applied as one (a null it wrote, then a test) is answered when the
// request ends, not when the slice is done.
func TestApplyPatchBoundsObservedNulls(t *testing.T) {
	ops := []string{`{"op":"add","path":"/metadata/labels","value":null}`, `{"op":"add","path":"/metadata/finalizers","value":[]}`}
	for i := range 600 {
		ops = append(ops, fmt.Sprintf(`{"op":"add","path":"/metadata/finalizers/0","value":"f%d"}`, i))
	}
	ops = append(ops, `{"op":"test","path":"/metadata/labels","value":null}`, `{"op":"add","path":"/metadata/annotations","value":{}}`)
	patch, err := evanphx.DecodePatch([]byte("[" + strings.Join(ops, ",") + "]"))
	if err != nil {
		t.Fatal(err)
	}
	if n := wholeSlice([]byte(`{}`), patch); n != len(patch)-1 {
		t.Fatalf("wholeSlice = %d, want %d", n, len(patch)-1)
	}
	obj := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c"}}
	_, _, err = ApplyPatch(endedContext{context.Background()}, scheme.New(), obj, corev1.SchemeGroupVersion.WithKind("ConfigMap"), patch)
	var interrupted *PatchInterrupted
	if !errors.As(err, &interrupted) || interrupted.Applied != 0 || interrupted.Total != len(patch) {
		t.Fatalf("error %v", err)
	}
	if _, _, err := ApplyPatch(context.Background(), scheme.New(), obj, corev1.SchemeGroupVersion.WithKind("ConfigMap"), patch); err != nil {
		t.Fatalf("without a deadline: %v", err)
	}
}

// TestChunkedApplyIsWhole proves the sliced application ApplyPatch uses
// for long patches gives what evanphx's Apply of the whole patch gives —
// the same bytes, or the same first error word for word, or the same
// panic — over random patches on real objects: every operation kind, good
// and bad paths, negative indices, duplicate keys, numbers as written,
// and copies of a large value that pass the 3 MiB copy limit only
// together, across slices.
func TestChunkedApplyIsWhole(t *testing.T) {
	limitCopies()
	docs := chunkDocs(t)
	rng := rand.New(rand.NewSource(31))
	n := 800
	if testing.Short() {
		n = 200
	}
	// A null the patch wrote, then a test or a copy that tells it from a
	// decoded one; a string with a literal <, > or & in the object or a
	// value, then a test (wholeSlice).
	amp := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","annotations":{"a":"x&y"}},"data":{}}`)
	for _, tc := range []struct{ doc, raw string }{
		{string(amp), `[{"op":"add","path":"/data/x","value":1},{"op":"add","path":"/data/y","value":1},{"op":"test","path":"/metadata/annotations/a","value":"x&y"}]`},
		{string(amp), `[{"op":"add","path":"/data/x","value":1},{"op":"add","path":"/data/y","value":1},{"op":"test","path":"/metadata/annotations/a","value":"x\u0026y"}]`},
		{"", `[{"op":"add","path":"/spec/x","value":"<b>"},{"op":"add","path":"/spec/y","value":1},{"op":"test","path":"/spec/x","value":"<b>"}]`},
		{"", `[{"op":"add","path":"/spec/x","value":"\u003cb>"},{"op":"add","path":"/spec/y","value":1},{"op":"test","path":"/spec/x","value":"\u003cb\u003e"}]`},
		{string(amp), `[{"op":"copy","from":"/metadata/annotations/a","path":"/data/c"},{"op":"test","path":"/data/c","value":"x\u0026y"},{"op":"add","path":"/data/y","value":1},{"op":"copy","from":"/metadata","path":"/data/m"}]`},
		{"big", `[{"op":"copy","from":"/data/big","path":"/data/c1"},{"op":"copy","from":"/data/big","path":"/data/c2"},{"op":"test","path":"/data/small","value":"s"},{"op":"add","path":"/data/y","value":1},{"op":"copy","from":"/data/big","path":"/data/c3"},{"op":"copy","from":"/data/big","path":"/data/c4"},{"op":"copy","from":"/data/big","path":"/data/c5"}]`},
		{"", `[{"op":"add","path":"/spec/x","value":"\u2028"},{"op":"add","path":"/spec/y","value":1},{"op":"test","path":"/spec/x","value":"\u2028"}]`},
	} {
		patch, err := evanphx.DecodePatch([]byte(tc.raw))
		if err != nil {
			t.Fatal(err)
		}
		doc := docs[1]
		switch tc.doc {
		case "":
		case "big":
			doc = docs[0]
		default:
			doc = []byte(tc.doc)
		}
		whole, wholeErr := applyOutcome(func() ([]byte, error) { return patch.Apply(doc) })
		for _, chunk := range []int{1, 2} {
			got, gotErr := applyOutcome(func() ([]byte, error) { return applyChunked(context.Background(), doc, patch, chunk) })
			if gotErr != wholeErr || string(got) != string(whole) {
				t.Errorf("patch %s in slices of %d:\n got %s / %s\nwant %s / %s", tc.raw, chunk, trim(got), gotErr, trim(whole), wholeErr)
			}
		}
	}
	for _, raw := range []string{
		`[{"op":"add","path":"/metadata/labels/n","value":null},{"op":"add","path":"/spec/x","value":1},{"op":"test","path":"/metadata/labels/n","value":null}]`,
		`[{"op":"add","path":"/metadata/labels/n","value":null},{"op":"add","path":"/spec/x","value":1},{"op":"test","path":"/metadata/labels","value":{"app":"web","x/y":"z","n":null}}]`,
		`[{"op":"add","path":"/metadata/finalizers","value":[]},{"op":"add","path":"/metadata/finalizers/-","value":null},{"op":"add","path":"/spec/x","value":1},{"op":"test","path":"/metadata/finalizers","value":[null]}]`,
		`[{"op":"replace","path":"/metadata/name","value":null},{"op":"add","path":"/spec/x","value":1},{"op":"copy","from":"/metadata/name","path":"/spec/y"},{"op":"test","path":"/spec/y","value":null}]`,
		`[{"op":"add","path":"/spec/x","value":null},{"op":"add","path":"/spec/y","value":1},{"op":"add","path":"/spec/z","value":1},{"op":"remove","path":"/spec/z"}]`,
	} {
		patch, err := evanphx.DecodePatch([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		doc := docs[1]
		whole, wholeErr := applyOutcome(func() ([]byte, error) { return patch.Apply(doc) })
		for _, chunk := range []int{1, 2} {
			got, gotErr := applyOutcome(func() ([]byte, error) { return applyChunked(context.Background(), doc, patch, chunk) })
			if gotErr != wholeErr || string(got) != string(whole) {
				t.Errorf("patch %s in slices of %d:\n got %s / %s\nwant %s / %s", raw, chunk, trim(got), gotErr, trim(whole), wholeErr)
			}
		}
	}
	outcomes := map[string]int{}
	for i := range n {
		doc, ops, big := docs[1], 1+rng.Intn(40), false
		chunks := []int{1, 2, 3, 7}
		if i%100 == 0 {
			// The document with a large value.
			doc, ops, big, chunks = docs[0], 4+rng.Intn(8), true, []int{3}
		}
		raw := randomPatch(rng, ops)
		if rng.Intn(2) == 0 {
			raw = cleanPatch(rng, ops, big)
		}
		patch, err := evanphx.DecodePatch([]byte(raw))
		if err != nil {
			t.Fatalf("patch %s: %v", raw, err)
		}
		whole, wholeErr := applyOutcome(func() ([]byte, error) { return patch.Apply(doc) })
		for _, chunk := range chunks {
			got, gotErr := applyOutcome(func() ([]byte, error) { return applyChunked(context.Background(), doc, patch, chunk) })
			if gotErr != wholeErr || string(got) != string(whole) {
				t.Fatalf("patch %s in slices of %d:\n got %s / %s\nwant %s / %s", raw, chunk, trim(got), gotErr, trim(whole), wholeErr)
			}
		}
		switch {
		case wholeErr == "":
			outcomes["applied"]++
		case strings.Contains(wholeErr, "exceeding the limit"):
			outcomes["copy limit"]++
		case strings.HasPrefix(wholeErr, "panic"):
			outcomes["panic"]++
		default:
			outcomes["error"]++
		}
	}
	if !testing.Short() {
		for _, o := range []string{"applied", "copy limit", "error"} {
			if outcomes[o] == 0 {
				t.Errorf("no patch ended %s: %v", o, outcomes)
			}
		}
	}
	t.Logf("outcomes: %v", outcomes)
}

// FuzzChunkedApply: any patch, applied in slices of the size its first
// byte gives, gives what the whole patch gives.
func FuzzChunkedApply(f *testing.F) {
	for _, seed := range []string{
		`[{"op":"add","path":"/metadata/finalizers","value":[]},{"op":"add","path":"/metadata/finalizers/0","value":"a"},{"op":"copy","from":"/metadata/finalizers","path":"/spec/x"}]`,
		`[{"op":"move","from":"/spec/containers/0","path":"/spec/containers/-"},{"op":"test","path":"/spec/containers/1/name","value":"app"},{"op":"remove","path":"/spec/containers/-1"}]`,
		`[{"op":"replace","path":"/metadata/labels","value":{"a" : 1.0, "a":2}},{"op":"copy","from":"/metadata/labels","path":"/metadata/annotations"},{"op":"test","path":"/metadata/annotations","value":{"a":2}}]`,
		`[{"op":"add","path":"/metadata/labels/n","value":null},{"op":"add","path":"/spec/x","value":1},{"op":"test","path":"/metadata/labels/n","value":null},{"op":"copy","from":"/metadata/labels/n","path":"/spec/y"}]`,
	} {
		f.Add(byte(1), []byte(seed))
	}
	limitCopies()
	doc := chunkDocs(f)[1]
	f.Fuzz(func(t *testing.T, chunk byte, raw []byte) {
		patch, err := evanphx.DecodePatch(raw)
		if err != nil {
			return
		}
		whole, wholeErr := applyOutcome(func() ([]byte, error) { return patch.Apply(doc) })
		got, gotErr := applyOutcome(func() ([]byte, error) { return applyChunked(context.Background(), doc, patch, 1+int(chunk%8)) })
		if gotErr != wholeErr || string(got) != string(whole) {
			t.Fatalf("in slices of %d:\n got %s / %s\nwant %s / %s", 1+int(chunk%8), trim(got), gotErr, trim(whole), wholeErr)
		}
	})
}

// applyOutcome runs apply, its error or panic as text.
func applyOutcome(apply func() ([]byte, error)) (out []byte, msg string) {
	defer func() {
		if r := recover(); r != nil {
			out, msg = nil, fmt.Sprintf("panic: %v", r)
		}
	}()
	out, err := apply()
	if err != nil {
		return nil, err.Error()
	}
	return out, ""
}

func trim(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}

// chunkDocs are encoded real objects, as ApplyPatch encodes them: a
// ConfigMap with a 700 KiB value (five copies pass the copy limit) and a
// Pod with lists to insert into, move within and test.
func chunkDocs(t testing.TB) [][]byte {
	t.Helper()
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default", Labels: map[string]string{"app": "web"}},
		Data: map[string]string{"big": strings.Repeat("x", 700<<10) + "<&>", "small": "s"}}
	pod := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Labels: map[string]string{"app": "web", "x/y": "z"}, Annotations: map[string]string{"a~b": "c"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx", Env: []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B"}}}, {Name: "side", Image: "busybox", Args: []string{"a", "b", "c"}}}}}
	var docs [][]byte
	for _, o := range []runtime.Object{cm, pod} {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			t.Fatal(err)
		}
		js, err := jsonvalue.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, js)
	}
	return docs
}

// cleanPatch is a JSON patch of n operations that apply to either of
// chunkDocs' objects (but for copies of the large value past the limit):
// finalizers added, inserted, moved and removed, labels and annotations
// added and copied, tests that hold; withBig, copies of the large value.
func cleanPatch(rng *rand.Rand, n int, withBig bool) string {
	ops := []string{`{"op":"add","path":"/metadata/finalizers","value":["a","b"]}`}
	for i := range n {
		k := rng.Intn(9)
		if withBig && rng.Intn(2) == 0 {
			k = 8
		}
		switch k {
		case 0:
			ops = append(ops, fmt.Sprintf(`{"op":"add","path":"/metadata/finalizers/%d","value":"f%d"}`, rng.Intn(3), i))
		case 1:
			ops = append(ops, fmt.Sprintf(`{"op":"add","path":"/metadata/finalizers/-","value":{"k" : %d.0, "k":"%d"}}`, i, i))
		case 2:
			ops = append(ops, `{"op":"move","from":"/metadata/finalizers/0","path":"/metadata/finalizers/-"}`)
		case 3:
			ops = append(ops, fmt.Sprintf(`{"op":"add","path":"/metadata/labels/k%d","value":"v<%d>"}`, i, i))
		case 4:
			ops = append(ops, `{"op":"copy","from":"/metadata/labels","path":"/metadata/annotations"}`)
		case 5:
			ops = append(ops, `{"op":"copy","from":"/metadata/finalizers/-1","path":"/metadata/finalizers/0"}`)
		case 6:
			ops = append(ops, `{"op":"test","path":"/metadata/namespace","value":"default"}`, `{"op":"replace","path":"/metadata/namespace","value":"default"}`)
		case 7:
			ops = append(ops, `{"op":"add","path":"/metadata/finalizers/0","value":"x"}`, `{"op":"remove","path":"/metadata/finalizers/0"}`)
		default:
			if withBig {
				ops = append(ops, fmt.Sprintf(`{"op":"copy","from":"/data/big","path":"/data/c%d"}`, i))
			} else {
				ops = append(ops, `{"op":"copy","from":"/metadata/name","path":"/metadata/labels/name"}`)
			}
		}
	}
	return "[" + strings.Join(ops, ",") + "]"
}

// randomPatch is a JSON patch of n operations drawn from the paths and
// values of chunkDocs' objects, good and bad.
func randomPatch(rng *rand.Rand, n int) string {
	// The first ones resolve in most documents a patch leads to.
	good := 14
	paths := []string{"/metadata/labels/app", "/metadata/labels/new", "/metadata/labels/x~1y", "/metadata/annotations/a~0b", "/metadata/annotations/n",
		"/spec/containers/0/env/-", "/spec/containers/1/args/0", "/spec/containers/1/args/-", "/spec/containers/0/name", "/spec/x",
		"/data/small", "/data/copy", "/metadata/name", "/spec/containers/-",
		"/metadata/labels", "/metadata/annotations", "/metadata/finalizers", "/metadata/finalizers/0", "/metadata/finalizers/-", "/metadata/finalizers/-1",
		"/metadata/finalizers/1", "/spec/containers/0", "/spec/containers/1", "/spec/containers/-1", "/spec/containers/5", "/spec/containers/0/env/0",
		"/spec/containers/0/env/1/value", "/spec/containers/1/args/2", "/spec/x/y", "/data/big", "/data", "/data/big/x", "/missing/deep", "/spec", "", "/",
		"metadata/name", "/metadata/labels/app/x", "/spec/containers/01", "/spec/containers/x"}
	pick := func() string {
		if rng.Intn(10) < 8 {
			return paths[rng.Intn(good)]
		}
		return paths[rng.Intn(len(paths))]
	}
	values := []string{`1`, `1.0`, `1e2`, `-0`, `"s"`, `"<&>"`, `true`, `null`, `[]`, `{}`, `[1, 2 , "3"]`, `{"a" : 1, "a": 2}`,
		`{"name":"c","image":"i","env":[{"name":"E"}]}`, `["f"]`, `{"app":"web"}`, `{ "x" : [ {} ] }`}
	kinds := []string{"add", "add", "add", "add", "add", "remove", "replace", "move", "copy", "copy", "test", "bogus"}
	ops := make([]string, n)
	for i := range ops {
		kind := kinds[rng.Intn(len(kinds))]
		path := pick()
		op := fmt.Sprintf(`{"op":%q,"path":%q`, kind, path)
		switch kind {
		case "move", "copy":
			from := pick()
			if rng.Intn(3) == 0 {
				from = "/data/big"
			}
			op += fmt.Sprintf(`,"from":%q`, from)
		case "remove":
		default:
			if rng.Intn(30) != 0 {
				op += `,"value":` + values[rng.Intn(len(values))]
			}
		}
		ops[i] = op + "}"
	}
	return "[" + strings.Join(ops, ",") + "]"
}
