package webhook

import (
	"bytes"
	"context"
	"math/rand/v2"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/jsonpatch"
	"github.com/mutatis-dev/mutatis/matching"
)

// envelopeCases are reviews decodeEnvelope must read as sigsjson does, or
// leave to it: every field, null in each, values of other types, keys
// repeated, in other cases and escaped, unknown members, strings with
// escapes and invalid UTF-8, objects that are no JSON objects or that
// decodeMap refuses, and malformed JSON.
var envelopeCases = func() []string {
	r := func(old, new string) string { return strings.Replace(minimalReview, old, new, 1) }
	full := `{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1beta1","request":{"uid":"0f1e","kind":{"group":"apps","version":"v1","kind":"Deployment"},` +
		`"resource":{"group":"apps","version":"v1","resource":"deployments"},"subResource":"scale","requestKind":{"group":"apps","version":"v1beta2","kind":"Deployment"},` +
		`"requestResource":{"group":"apps","version":"v1beta2","resource":"deployments"},"requestSubResource":"scale","name":"web","namespace":"shop","operation":"UPDATE",` +
		`"userInfo":{"username":"system:serviceaccount:kube-system:x","uid":"u-9","groups":["system:serviceaccounts","system:authenticated"],"extra":{"scopes":["a","b"],"empty":[]}},` +
		`"object":{"apiVersion":"apps/v1","kind":"Deployment","spec":{"replicas":3}},"oldObject":{"apiVersion":"apps/v1","kind":"Deployment","spec":{"replicas":2}},` +
		`"dryRun":true,"options":{"apiVersion":"meta.k8s.io/v1","kind":"UpdateOptions","fieldManager":"kubectl"}}}`
	f := func(old, new string) string { return strings.Replace(full, old, new, 1) }
	return []string{
		minimalReview, full,
		f(`"dryRun":true`, `"dryRun":false`), f(`"dryRun":true`, `"dryRun":null`), f(`"dryRun":true`, `"dryRun":"true"`), f(`"dryRun":true`, `"dryRun":1`),
		f(`"requestKind":{`, `"requestKind":null,"x":{`), f(`"requestResource":{`, `"requestResource":null,"x":{`),
		f(`"groups":["system:serviceaccounts","system:authenticated"]`, `"groups":[]`),
		f(`"groups":["system:serviceaccounts","system:authenticated"]`, `"groups":null`),
		f(`"groups":["system:serviceaccounts","system:authenticated"]`, `"groups":["a",null]`),
		f(`"groups":["system:serviceaccounts","system:authenticated"]`, `"groups":"a"`),
		f(`"groups":["system:serviceaccounts","system:authenticated"]`, `"groups":[1]`),
		f(`"extra":{"scopes":["a","b"],"empty":[]}`, `"extra":{}`),
		f(`"extra":{"scopes":["a","b"],"empty":[]}`, `"extra":null`),
		f(`"extra":{"scopes":["a","b"],"empty":[]}`, `"extra":{"a":null}`),
		f(`"extra":{"scopes":["a","b"],"empty":[]}`, `"extra":{"a":"x"}`),
		f(`"extra":{"scopes":["a","b"],"empty":[]}`, `"extra":{"a":["x"],"a":["y"]}`),
		f(`"extra":{"scopes":["a","b"],"empty":[]}`, `"extra":[]`),
		f(`"userInfo":{`, `"userInfo":null,"u":{`), f(`"userInfo":{`, `"userInfo":{"username":"a"},"userInfo":{`),
		f(`"kind":{"group":"apps"`, `"kind":null,"k":{"group":"apps"`), f(`"kind":{"group":"apps"`, `"kind":{"group":"x","group":"apps"`),
		f(`"kind":{"group":"apps"`, `"kind":{"Group":"x","group":"apps"`), f(`"kind":{"group":"apps"`, `"kind":"apps","k":{"group":"apps"`),
		f(`"resource":{"group":"apps"`, `"resource":{"group":1`), f(`"resource":{"group":"apps"`, `"resource":{"resource":"x","group":"apps"`),
		f(`"oldObject":{`, `"oldObject":null,"old":{`), f(`"options":{`, `"options":null,"opts":{`),
		f(`"options":{`, `"options":[],"opts":{`), f(`"object":{`, `"object":{},"o":{`),
		r(`"object":{`, `"object":null,"o":{`), r(`"object":{`, `"object":"str","o":{`), r(`"object":{`, `"object":1,"o":{`),
		r(`"object":{`, `"object":[1],"o":{`), r(`"object":{`, `"object":true,"o":{`),
		r(`"object":{`, `"object":{"n":1e400},"o":{`), r(`"object":{`, `"object":{"n":-9223372036854775809,"m":1.5},"o":{`),
		r(`"object":{`, `"object":{"d":`+strings.Repeat("[", 1200)+strings.Repeat("]", 1200)+`},"o":{`),
		r(`"object":{`, `"object":{"a":1},"object":{`),
		r(`"object":{`, `"object":{"f":1.0,`), r(`"object":{`, `"object":{"f":[{"g":-0.0}],`), r(`"object":{`, `"object":{"f":1e2,`),
		r(`"object":{`, `"object":{"f":1.5,"g":[2.5e-3]},"object":{`), r(`"object":{`, `"object":{"f":1.0},"object":{`),
		r(`"object":{`, `"object":{"f":0.5,"g":{"h":1E400}},"object":{`), r(`"object":{`, `"oldObject":{"f":1.0},"object":{`), r(`"uid":"u1"`, `"uid":"u0","uid":"u1"`),
		r(`"uid":"u1"`, `"UID":"u0","uid":"u1"`), r(`"uid":"u1"`, `"uid":"u1","Uid":"u2"`), r(`"uid":"u1"`, `"\u0075id":"u1"`),
		r(`"uid":"u1"`, `"uid":1`), r(`"uid":"u1"`, `"uid":null`), r(`"uid":"u1"`, `"uid":"u\u00e9\ud83d\ude00\"\\\/\b\f\n\r\t"`),
		r(`"uid":"u1"`, `"uid":"a`+"\xff"+`b\ud800"`), r(`"uid":"u1"`, `"uid":"a`+"\x01"+`"`), r(`"uid":"u1"`, `"uid":"\x"`),
		r(`"namespace":"shop"`, `"namespace":"shop","unknown":{"a":[1,{"b":null}],"c":1e400}`),
		r(`"namespace":"shop"`, `"namespace":"shop","nested":`+strings.Repeat("[", 10001)+strings.Repeat("]", 10001)),
		r(`"operation":"CREATE"`, `"operation":"PATCH"`), r(`"operation":"CREATE"`, `"operation":["CREATE"]`),
		r(`"kind":"AdmissionReview"`, `"kind":"AdmissionReview","kind":"AdmissionReview"`),
		r(`"kind":"AdmissionReview"`, `"Kind":"AdmissionReview"`), r(`"kind":"AdmissionReview"`, `"kind":"Pod"`),
		r(`"kind":"AdmissionReview"`, `"kind":null`), r(`"kind":"AdmissionReview"`, `"kind":{}`),
		r(`"apiVersion":"admission.k8s.io/v1"`, `"apiversion":"admission.k8s.io/v1"`),
		r(`"request":{`, `"response":{"uid":"x","allowed":true},"request":{`), r(`"request":{`, `"response":null,"request":{`),
		r(`"request":{`, `"Request":{`), r(`"request":{`, `"request":null,"r":{`), r(`"request":{`, `"request":[],"r":{`),
		r(`"request":{`, `"request":{"uid":"x"},"request":{`), r(`"request":{`, `"request":{},"r":{`),
		r(`"request":{`, `"request":{"name":"zz","dryRun":true},"request":{`),
		r(`"userInfo":{"username":"alice"}`, `"userInfo":{"groups":["g"]},"userInfo":{"username":"alice"}`),
		r(`"kind":{"group":"","version":"v1","kind":"ConfigMap"}`, `"kind":{"group":"zz"},"kind":{"version":"v1","kind":"ConfigMap"}`),
		f(`"requestKind":{"group":"apps",`, `"requestKind":{"group":"zz"},"requestKind":{`),
		f(`"extra":{"scopes":["a","b"],"empty":[]}`, `"extra":{"a":["x"]},"extra":{"b":["y"]}`),
		f(`"groups":["system:serviceaccounts","system:authenticated"]`, `"groups":["a","b"],"groups":["c"]`),
		" \t\r\n" + minimalReview + " \n", minimalReview + "x", minimalReview + "{}", minimalReview[:len(minimalReview)-1],
		strings.ReplaceAll(minimalReview, ":", " : "), strings.ReplaceAll(minimalReview, ",", "\n,\t"),
		`{}`, `{"kind":"AdmissionReview"}`, `null`, `[]`, `"s"`, `1`, `{`, `{"a":1,}`, `{"a" 1}`, ` `, "\u00a0",
	}
}()

// checkEnvelope fails t when decodeEnvelope, on body, gives anything but
// what sigsjson and decodeObject give (or does not leave it to them).
func checkEnvelope(t *testing.T, body []byte) (took bool) {
	t.Helper()
	// decodeEnvelope is decodeEnvelopeOwned of a copy; the test makes
	// the copy itself, so that it knows exactly where the copy lies.
	in := append([]byte(nil), body...)
	var got admissionv1.AdmissionReview
	b, ok := decodeEnvelopeOwned(in, &got, nil)
	if !bytes.Equal(in, body) {
		t.Fatalf("%.80q: the body was modified", body)
	}
	if !ok {
		return false
	}
	var want admissionv1.AdmissionReview
	if err := decodeReviewReference(body, &want); err != nil {
		t.Fatalf("%.80q: taken, but sigsjson fails: %v", body, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%.80q:\n got %#v\nwant %#v", body, got, want)
	}
	if got.Request != nil && len(got.Request.Object.Raw) > 0 {
		// The review's own strings hold no part of the body's copy, which
		// holds Raw: none lies within the copy. (A window around Raw
		// instead of the copy's exact bounds once failed CI: a string
		// allocated next to the copy lay within it.)
		start := uintptr(unsafe.Pointer(&in[0]))
		if raw := uintptr(unsafe.Pointer(&got.Request.Object.Raw[0])); raw < start || raw >= start+uintptr(len(in)) {
			t.Fatalf("%.80q: Raw is not the body's copy", body)
		}
		r := got.Request
		for _, s := range append([]string{got.Kind, got.APIVersion, string(r.UID), r.Kind.Kind, r.Resource.Resource, r.Name, r.Namespace,
			string(r.Operation), r.UserInfo.Username, r.UserInfo.UID}, r.UserInfo.Groups...) {
			if p := uintptr(unsafe.Pointer(unsafe.StringData(s))); s != "" && p >= start && p < start+uintptr(len(in)) {
				t.Fatalf("%.80q: %q is kept in the body's copy", body, s)
			}
		}
	}
	// The flag the patch's check relies on is exactly IsNormalized.
	if b.objectNormalized != (b.object != nil && jsonpatch.IsNormalized(b.object)) {
		t.Fatalf("%.80q: objectNormalized %v for %#v", body, b.objectNormalized, b.object)
	}
	if want.Request == nil {
		if b.object != nil || b.oldObject != nil || b.options != nil {
			t.Fatalf("%.80q: objects %v without a request", body, b)
		}
		return true
	}
	for _, o := range []struct {
		field string
		raw   []byte
		got   map[string]any
	}{{"object", want.Request.Object.Raw, b.object}, {"oldObject", want.Request.OldObject.Raw, b.oldObject}, {"options", want.Request.Options.Raw, b.options}} {
		var wantObj map[string]any
		if raw := bytes.TrimSpace(o.raw); len(raw) > 0 && !bytes.Equal(raw, []byte("null")) {
			var err error
			if wantObj, err = decodeMapReference(raw); err != nil || wantObj == nil {
				t.Fatalf("%.80q: %s taken, but decodeObject fails: %v", body, o.field, err)
			}
		}
		if !reflect.DeepEqual(o.got, wantObj) {
			t.Fatalf("%.80q: %s\n got %#v\nwant %#v", body, o.field, o.got, wantObj)
		}
	}
	return true
}

// labeler is an engine stand-in that labels the object it is given.
var labeler = fakeAdmitter(func(_ context.Context, a *matching.Attributes) (chain.Result, error) {
	if a.Object == nil {
		return chain.Result{}, nil
	}
	obj := a.Object.DeepCopy()
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels["labeled"] = a.UserInfo.GetName() + "/" + a.Namespace
	obj.SetLabels(labels)
	return chain.Result{Object: obj.Object, Records: chain.Records{Invocations: []chain.Invocation{{Record: chain.Record{Configuration: "p", Hook: "b"}, Mutations: []chain.MutationOutcome{{}}}}}}, nil
})

// checkAnswer fails t when Reviewer.Review answers body otherwise than
// the reference steps: the review decoded by sigsjson, its objects by
// decodeObject, the response encoded by encoding/json.
func checkAnswer(t *testing.T, body []byte) {
	t.Helper()
	rv := &Reviewer{Admitter: labeler, ExplainDryRun: true}
	got, gotErr := rv.Review(context.Background(), body)
	want, wantErr := func() ([]byte, error) {
		if len(bytes.TrimSpace(body)) == 0 {
			return nil, reviewError(400, "BadRequest", "empty body: want an AdmissionReview")
		}
		var review admissionv1.AdmissionReview
		if err := decodeReviewReference(body, &review); err != nil {
			return nil, reviewError(400, "BadRequest", err.Error())
		}
		if err := checkReview(&review); err != nil {
			return nil, reviewError(400, "BadRequest", err.Error())
		}
		attrs, original, err := attributes(review.Request, nil)
		if err != nil {
			return nil, reviewError(400, "BadRequest", err.Error())
		}
		res, admitErr := labeler(context.Background(), attrs)
		resp, err := respond(review.Request, original, false, res, admitErr, RespondOptions{Explain: attrs.DryRun})
		if err != nil {
			return nil, reviewError(500, "InternalError", err.Error())
		}
		return encodeReviewReference(review.APIVersion, resp)
	}()
	if !reflect.DeepEqual(gotErr, wantErr) {
		t.Fatalf("%.80q: error %#v, want %#v", body, gotErr, wantErr)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%.80q:\n got %s\nwant %s", body, got, want)
	}
}

// realReviews are the reviews kube-apiserver sends (k8s.io/apiserver's
// own code) for this package's objects.
func realReviews(t *testing.T) [][]byte {
	w := newWorld(t)
	alice := &user.DefaultInfo{Name: "alice", UID: "u-1", Groups: []string{"dev"}, Extra: map[string][]string{"scopes": {"a", "b"}, "none": {}}}
	var out [][]byte
	for _, r := range []request{
		{op: admission.Create, object: podYAML},
		{op: admission.Create, object: podYAML, reviewVersions: []string{"v1beta1"}},
		{op: admission.Create, object: configMapYAML, dryRun: true, user: alice},
		{op: admission.Update, object: configMapYAML, old: strings.Replace(configMapYAML, "{k: v}", "{k: old}", 1)},
		{op: admission.Update, object: podYAML, old: podYAML, subresource: "status"},
		{op: admission.Delete, object: secretYAML, old: secretYAML},
		{op: admission.Create, object: secretYAML, user: &user.DefaultInfo{Name: "bob"}},
	} {
		_, body, _, _ := w.review(t, r)
		out = append(out, body)
	}
	return out
}

// TestDecodeEnvelope holds decodeEnvelope, and the Reviewer's answers, to
// the reference decoding on envelopeCases, on real reviews, which it must
// take, and on those reviews mutated byte by byte.
func TestDecodeEnvelope(t *testing.T) {
	reals := realReviews(t)
	for _, body := range reals {
		if !checkEnvelope(t, body) {
			t.Errorf("%.200s: not taken", body)
		}
		checkAnswer(t, body)
	}
	took := 0
	for _, c := range envelopeCases {
		if checkEnvelope(t, []byte(c)) {
			took++
		}
		checkAnswer(t, []byte(c))
	}
	if took < 10 || took == len(envelopeCases) {
		t.Errorf("%d of %d cases taken: the cases no longer test both ways", took, len(envelopeCases))
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	const special = `{}[]:,"\ntu0-.e1 ` + "\xff"
	for i := range 3000 {
		body := []byte(reals[i%len(reals)])
		for range 1 + rnd.IntN(3) {
			at := rnd.IntN(len(body))
			switch c := special[rnd.IntN(len(special))]; rnd.IntN(3) {
			case 0:
				body = append(body[:at:at], body[at+1:]...)
			case 1:
				body = append(body[:at:at], append([]byte{c}, body[at:]...)...)
			default:
				body = append([]byte(nil), body...)
				body[at] = c
			}
		}
		checkEnvelope(t, body)
		if i%10 == 0 {
			checkAnswer(t, body)
		}
	}
}

// FuzzDecodeEnvelope holds decodeEnvelope, and the Reviewer's answers, to
// the reference decoding on any bytes.
func FuzzDecodeEnvelope(f *testing.F) {
	for _, c := range envelopeCases {
		if len(c) < 4000 {
			f.Add([]byte(c))
		}
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkEnvelope(t, body)
		checkAnswer(t, body)
	})
}

// BenchmarkDecodeReview decodes a review of a Pod of three containers
// into the engine's attributes, as the Reviewer does (impl=direct) and as
// the reference steps do (impl=reference: sigsjson, then each object).
func BenchmarkDecodeReview(b *testing.B) {
	body := podReview(3, defaultedContainer)
	b.Run("impl=direct", func(b *testing.B) {
		b.ReportAllocs()
		defer reportCPU(b)()
		for b.Loop() {
			review, objs, decoded, err := decode(body, nil)
			if err != nil || !decoded {
				b.Fatal(err, decoded)
			}
			if _, _, err := attributes(review.Request, &objs); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=reference", func(b *testing.B) {
		b.ReportAllocs()
		defer reportCPU(b)()
		for b.Loop() {
			var review admissionv1.AdmissionReview
			if err := decodeReviewReference(body, &review); err != nil {
				b.Fatal(err)
			}
			if _, _, err := attributes(review.Request, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// reportCPU, deferred, reports the CPU time (user and system) of the
// process per operation, cpu-ns/op: on a shared machine it varies much
// less with the load than the wall time (as test/bench's).
func reportCPU(b *testing.B) func() {
	cpu := func() int64 {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			b.Fatal(err)
		}
		return ru.Utime.Nano() + ru.Stime.Nano()
	}
	start := cpu()
	return func() { b.ReportMetric(float64(cpu()-start)/float64(b.N), "cpu-ns/op") }
}
