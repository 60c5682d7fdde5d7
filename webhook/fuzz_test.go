package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	evanphxjsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/internal/valuetest"
	"github.com/mutatis-dev/mutatis/matching"
)

// FuzzReview sends arbitrary bodies through the decode path of /mutate
// (with an engine stand-in that labels the object): the handler must never
// panic, must answer 200 or 400, and every 200 must be an AdmissionReview
// echoing the uid whose patch applies.
func FuzzReview(f *testing.F) {
	for _, seed := range []string{
		minimalReview,
		`{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"x","operation":"UPDATE","object":{"metadata":{"labels":{"a":"b"}}},"oldObject":{}}}`,
		`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"x","operation":"DELETE","oldObject":{"kind":"Pod"}}}`,
		`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"x","operation":"CONNECT","object":null,"options":{"a":1.5}}}`,
		`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"x","operation":"CREATE","object":"str"}}`,
		`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"x","operation":"CREATE","object":{"metadata":[]}}}`,
		`{}`, `null`, `[`, "",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		// The object the Handler decoded is shared with Respond's diff: the
		// admitter (the engine) and Respond must never modify it.
		var frozen []valuetest.Frozen
		labeler := fakeAdmitter(func(_ context.Context, a *matching.Attributes) (chain.Result, error) {
			if a.Object == nil {
				return chain.Result{}, nil
			}
			frozen = append(frozen, valuetest.Freeze(a.Object.Object))
			obj := a.Object.DeepCopy()
			labels := obj.GetLabels()
			if labels == nil {
				labels = map[string]string{}
			}
			labels["fuzzed"] = "true"
			obj.SetLabels(labels)
			return chain.Result{Object: obj.Object, Records: chain.Records{Invocations: []chain.Invocation{{Record: chain.Record{Configuration: "p", Hook: "b"}, Mutations: []chain.MutationOutcome{{}}}}}}, nil
		})
		h := &Handler{Admitter: labeler, ExplainDryRun: true}
		r := httptest.NewRequest(http.MethodPost, "/mutate", bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		for _, fr := range frozen {
			fr.Check(t, "the request's object")
		}
		switch rec.Code {
		case http.StatusBadRequest:
			return
		case http.StatusOK:
		default:
			t.Fatalf("HTTP %d: %s", rec.Code, rec.Body)
		}
		var in admissionv1.AdmissionReview
		if err := json.Unmarshal(body, &in); err != nil || in.Request == nil {
			// Decode accepted what encoding/json reads differently (it
			// matches keys case-insensitively): nothing to compare with.
			return
		}
		var out admissionv1.AdmissionReview
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
			t.Fatalf("answer is no AdmissionReview: %v\n%s", err, rec.Body)
		}
		if out.Response == nil || out.Response.UID != in.Request.UID || out.APIVersion != in.APIVersion {
			t.Fatalf("answer %s does not echo uid %q and version %q", rec.Body, in.Request.UID, in.APIVersion)
		}
		if len(out.Response.Patch) > 0 {
			p, err := evanphxjsonpatch.DecodePatch(out.Response.Patch)
			if err != nil {
				t.Fatalf("patch %s: %v", out.Response.Patch, err)
			}
			if _, err := p.Apply(in.Request.Object.Raw); err != nil {
				t.Fatalf("patch %s does not apply to %s: %v", out.Response.Patch, in.Request.Object.Raw, err)
			}
		}
	})
}
