package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/matching"
)

// TestReviewerWithoutHTTP: the admission handler answers reviews as bytes
// in, bytes out, and refuses what it cannot answer with the HTTP status
// its transport must use.
func TestReviewerWithoutHTTP(t *testing.T) {
	labeler := fakeAdmitter(func(_ context.Context, a *matching.Attributes) (chain.Result, error) {
		obj := a.Object.DeepCopy()
		obj.SetLabels(map[string]string{"team": "shop"})
		return chain.Result{Object: obj.Object, Records: chain.Records{Invocations: []chain.Invocation{{Record: chain.Record{Configuration: "p", Hook: "b"}, Mutations: []chain.MutationOutcome{{}}}}}}, nil
	})
	rv := &Reviewer{Admitter: labeler}
	review := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-1","kind":{"group":"","version":"v1","kind":"ConfigMap"},"resource":{"group":"","version":"v1","resource":"configmaps"},"namespace":"shop","name":"cm","operation":"CREATE","userInfo":{"username":"admin"},"object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"shop"}}}}`

	out, err := rv.Review(context.Background(), []byte(review))
	if err != nil {
		t.Fatal(err)
	}
	var got admissionv1.AdmissionReview
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if got.Response == nil || got.Response.UID != "u-1" || !got.Response.Allowed || string(got.Response.Patch) != `[{"op":"add","path":"/metadata/labels","value":{"team":"shop"}}]` {
		t.Fatalf("answer %s", out)
	}

	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		body string
		code int32
	}{
		{"not JSON", context.Background(), `{`, 400},
		{"no request", context.Background(), `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`, 400},
		{"deadline passed before evaluation", canceled, review, 503},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := rv.Review(tc.ctx, []byte(tc.body))
			var st *apierrors.StatusError
			if !errors.As(err, &st) || st.ErrStatus.Code != tc.code {
				t.Fatalf("error %v, want a Status with code %d", err, tc.code)
			}
		})
	}
}
