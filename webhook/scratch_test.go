package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apiserver/pkg/admission"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/matching"
)

// grower is an engine stand-in whose patches vary in size: it labels the
// object, and gives it as many annotations as its "grow" label says
// (thousands make a patch, and an answer, larger than a scratch keeps).
var grower = fakeAdmitter(func(ctx context.Context, a *matching.Attributes) (chain.Result, error) {
	res, err := labeler(ctx, a)
	if err != nil || res.Object == nil {
		return res, err
	}
	obj := &unstructured.Unstructured{Object: res.Object}
	n := 0
	_, _ = fmt.Sscan(obj.GetLabels()["grow"], &n)
	if n > 0 {
		ann := obj.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		for i := range n {
			ann[fmt.Sprintf("grown-%d", i)] = strings.Repeat("v", i%50)
		}
		obj.SetAnnotations(ann)
	}
	return res, nil
})

// scratchReviews are real reviews, reviews whose objects and patches
// outgrow what a scratch keeps, and real reviews mutated byte by byte
// (many of them malformed, decoded half way before the reference takes
// them), in an order that alternates large and small.
func scratchReviews(t *testing.T) [][]byte {
	reals := realReviews(t)
	out := append([][]byte(nil), reals...)
	big := func(grow, keys int) []byte {
		var data strings.Builder
		for i := range keys {
			if i > 0 {
				data.WriteByte(',')
			}
			fmt.Fprintf(&data, `"k%d":"%s"`, i, strings.Repeat("x", i%40))
		}
		return fmt.Appendf(nil, `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-%d-%d","kind":{"group":"","version":"v1","kind":"ConfigMap"},"resource":{"group":"","version":"v1","resource":"configmaps"},"namespace":"shop","operation":"CREATE","userInfo":{"username":"alice"},"object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"shop","labels":{"grow":"%d"}},"data":{%s},"list":[%s]}}}`,
			grow, keys, grow, data.String(), strings.TrimSuffix(strings.Repeat("1.5,", keys), ","))
	}
	for _, c := range [][2]int{{0, 3}, {3000, 2}, {0, 2000}, {10, 10}, {2000, 1500}, {1, 1}} {
		out = append(out, big(c[0], c[1]), reals[len(out)%len(reals)])
	}
	rnd := rand.New(rand.NewPCG(3, 4))
	const special = `{}[]:,"\ntu0-.e1 ` + "\xff"
	for i := range 600 {
		body := bytes.Clone(out[i%len(out)])
		for range 1 + rnd.IntN(3) {
			at := rnd.IntN(len(body))
			body[at] = special[rnd.IntN(len(special))]
		}
		out = append(out, body)
	}
	return out
}

// reviewAnswer is what a Handler answers body with when its review goes
// through Reviewer.Review (the body copied, every buffer its own): the
// HTTP status and the bytes.
func reviewAnswer(t *testing.T, admitter chain.Admitter, body []byte) (int, []byte) {
	t.Helper()
	rv := &Reviewer{Admitter: admitter, ExplainDryRun: true}
	out, err := rv.Review(context.Background(), bytes.Clone(body))
	if err != nil {
		var st *apierrors.StatusError
		if !errors.As(err, &st) {
			t.Fatalf("Review's error %v is no StatusError", err)
		}
		rec := httptest.NewRecorder()
		writeStatus(rec, int(st.ErrStatus.Code), st.ErrStatus.Reason, st.ErrStatus.Message)
		return rec.Code, rec.Body.Bytes()
	}
	return http.StatusOK, out
}

// TestHandlerScratchIsReview holds a Handler's answers — its reviews
// decoded in their own bodies, in a scratch the reviews before left —
// to Reviewer.Review's of a copy of the same body, answer by answer, over
// a stream of reviews through one Handler: small and large, patches that
// fit the scratch and that outgrow it, malformed ones decoded half way;
// and apart, the same stream served by concurrent reviews (under -race,
// that no two reviews share a scratch). Made wrong on purpose — the
// scratch put back before its answer is written, and its buffers then
// written over — it fails.
func TestHandlerScratchIsReview(t *testing.T) {
	bodies := scratchReviews(t)
	want := make([][]byte, len(bodies))
	codes := make([]int, len(bodies))
	for i, body := range bodies {
		codes[i], want[i] = reviewAnswer(t, grower, body)
	}
	ok := 0
	for _, c := range codes {
		if c == http.StatusOK {
			ok++
		}
	}
	if ok < 20 || ok == len(codes) {
		t.Fatalf("%d of %d reviews answered: the stream no longer tests both ways", ok, len(codes))
	}
	check := func(t *testing.T, h *Handler, i int) {
		rec := serveOnce(h, http.MethodPost, "/mutate", "application/json", bodies[i])
		if rec.Code != codes[i] || !bytes.Equal(rec.Body.Bytes(), want[i]) {
			t.Errorf("review %d (%.80q): HTTP %d\n%s\nwant HTTP %d\n%s", i, bodies[i], rec.Code, rec.Body, codes[i], want[i])
		}
	}
	h := &Handler{Admitter: grower, ExplainDryRun: true}
	for round := range 2 {
		for i := range bodies {
			check(t, h, i)
		}
		if t.Failed() {
			t.Fatalf("round %d", round)
		}
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := g; i < len(bodies); i += 2 {
				check(t, h, i)
			}
		})
	}
	wg.Wait()
}

// TestScratchKeepsWithinBounds: what a scratch keeps for the next review
// is emptied, cleared, and bounded whatever the review made.
func TestScratchKeepsWithinBounds(t *testing.T) {
	var p scratchPool
	s := p.get()
	v := new(int)
	s.members = append(make([]member, 0, 16), member{"k", v})
	s.elems = make([]any, 3, maxScratchElems+1)
	huge := make([]byte, 10, maxScratchBytes+1)
	small := make([]byte, 7, 100)
	p.put(s, huge, small)
	if len(s.patch) != 0 || cap(s.patch) > maxScratchBytes || len(s.out) != 0 || cap(s.out) != 100 {
		t.Fatalf("kept a patch of %d/%d bytes, an answer of %d/%d", len(s.patch), cap(s.patch), len(s.out), cap(s.out))
	}
	if s.elems != nil || len(s.members) != 0 || s.members[:1][0].value != nil {
		t.Fatalf("kept stacks %v, %v", s.elems, s.members[:1])
	}
	// The larger of what the scratch had and what the review gave back.
	s.patch = make([]byte, 0, 4096)
	p.put(s, make([]byte, 5, 64), huge)
	if cap(s.patch) != 4096 || cap(s.out) != 100 {
		t.Fatalf("kept %d and %d bytes of room", cap(s.patch), cap(s.out))
	}
}

// keepingWriter is a ResponseWriter whose Write fails and keeps the bytes
// it was given, as HTTP/2's does on a stream the client reset while the
// DATA frame can still be on its way.
type keepingWriter struct {
	*httptest.ResponseRecorder
	kept []byte
}

func (w *keepingWriter) Write(p []byte) (int, error) {
	w.kept = p
	return 0, errors.New("stream closed")
}

// TestFailedWriteKeepsItsAnswer: an answer whose Write failed is not lent
// to the next reviews, which would write into bytes the failed Write may
// still be sending.
func TestFailedWriteKeepsItsAnswer(t *testing.T) {
	bodies := scratchReviews(t)
	h := &Handler{Admitter: grower, ExplainDryRun: true}
	var first []byte
	for _, body := range bodies {
		if code, _ := reviewAnswer(t, grower, body); code == http.StatusOK {
			first = body
			break
		}
	}
	w := &keepingWriter{ResponseRecorder: httptest.NewRecorder()}
	r := httptest.NewRequest(http.MethodPost, "/mutate", bytes.NewReader(first))
	r.Header.Set("Content-Type", "application/json")
	h.ServeHTTP(w, r)
	if len(w.kept) == 0 {
		t.Fatal("the review wrote no answer")
	}
	sent := bytes.Clone(w.kept)
	// The same review again under another uid of the same length: its
	// answer fits the memory the failed one was written in.
	uid := bytes.Index(first, []byte(`"uid":"`)) + len(`"uid":"`)
	again := bytes.Clone(first)
	again[uid] ^= 1
	for range 3 {
		if rec := serveOnce(h, http.MethodPost, "/mutate", "application/json", again); rec.Code != http.StatusOK {
			t.Fatalf("HTTP %d: %s", rec.Code, rec.Body)
		}
	}
	if !bytes.Equal(w.kept, sent) {
		t.Fatalf("the failed Write's bytes were written over by the reviews after it:\n%.200s\nwas\n%.200s", w.kept, sent)
	}
}

// TestScratchForgetsItsResponse: the response a review answered in its
// scratch (respondIn) is emptied when the scratch is taken back, so that
// nothing of it (its patch, annotations, status) outlives the review.
func TestScratchForgetsItsResponse(t *testing.T) {
	var p scratchPool
	s := p.get()
	s.resp = admissionv1.AdmissionResponse{UID: "u", Allowed: true, AuditAnnotations: map[string]string{"a": "b"}, Patch: []byte("[]")}
	s.patchType = admissionv1.PatchTypeJSONPatch
	s.resp.PatchType = &s.patchType
	p.put(s, nil, nil)
	if !reflect.DeepEqual(s.resp, admissionv1.AdmissionResponse{}) || s.patchType != "" {
		t.Fatalf("kept the response %+v (patch type %q)", s.resp, s.patchType)
	}
}

// TestHandlerRoomIsReview holds a Handler's answers — the engine's
// records written in the room of its review's scratch
// (chain.RoomAdmitter), which the reviews before grew — to
// Reviewer.Review's, whose run makes new arrays, answer by answer: dry
// runs explained (every record of both rounds in the warnings) and not,
// through the engine of testdata/ and of test/load's 20 policies, their
// evaluators of one failure policy too, over a stream alternating them.
func TestHandlerRoomIsReview(t *testing.T) {
	worlds := []*world{newWorld(t), newWorldOf(t, "../test/load/testdata/policies", "testdata/resources.yaml")}
	loadPod, err := os.ReadFile("../test/load/testdata/pod.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// testdata/resources.yaml has no ServiceAccount of its own.
	loadPod = bytes.Replace(loadPod, []byte("serviceAccountName: checkout"), []byte("serviceAccountName: default"), 1)
	type served struct {
		admitter chain.Admitter
		handler  *Handler // one per admitter, its scratches lent to each review
		body     []byte
	}
	var stream []served
	for _, w := range worlds {
		admitters := []chain.Admitter{w.engine, w.engine.Only(admissionregistrationv1.Fail), w.engine.Only(admissionregistrationv1.Ignore)}
		handlers := make([]*Handler, len(admitters))
		for j, a := range admitters {
			handlers[j] = &Handler{Admitter: a, ExplainDryRun: true}
		}
		for _, object := range []string{podYAML, string(loadPod)} {
			for _, dryRun := range []bool{true, false} {
				_, body, _, _ := w.review(t, request{op: admission.Create, object: object, dryRun: dryRun})
				for j, a := range admitters {
					if _, ok := a.(chain.RoomAdmitter); !ok {
						t.Fatalf("%T lends no room", a)
					}
					stream = append(stream, served{a, handlers[j], body})
				}
			}
		}
	}
	explained := 0
	for round := range 3 {
		for i, s := range stream {
			code, want := reviewAnswer(t, s.admitter, s.body)
			rec := serveOnce(s.handler, http.MethodPost, PathMutate, "application/json", s.body)
			if rec.Code != code || !bytes.Equal(rec.Body.Bytes(), want) {
				t.Fatalf("round %d review %d: HTTP %d\n%s\nwant HTTP %d\n%s", round, i, rec.Code, rec.Body, code, want)
			}
			if bytes.Contains(want, []byte("pass 2: ")) {
				explained++
			}
		}
	}
	if explained == 0 {
		t.Fatal("no answer explains a reinvocation round: the stream no longer tests the records")
	}
}
