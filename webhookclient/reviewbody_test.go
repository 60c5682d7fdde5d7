package webhookclient_test

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/mutatis-dev/mutatis/cluster"
	"github.com/mutatis-dev/mutatis/webhookclient"
)

func TestReviewBody(t *testing.T) {
	sim, err := cluster.New(nil, cluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pod := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "web", "namespace": "default"},
		"spec":     map[string]any{"containers": []any{map[string]any{"name": "app", "image": "nginx"}}},
	}}
	attrs, err := sim.Attributes(cluster.Request{Object: pod, Operation: admission.Create, User: &user.DefaultInfo{Name: "admin"}})
	if err != nil {
		t.Fatal(err)
	}
	body, err := webhookclient.ReviewBody(sim.Scheme, attrs, "v1beta1")
	if err != nil {
		t.Fatal(err)
	}
	var review struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Request    struct {
			UID       string `json:"uid"`
			Kind      struct{ Kind string }
			Operation string
			UserInfo  struct{ Username string }
			Object    struct {
				Metadata struct{ Name string }
				Spec     struct {
					Containers []map[string]any
				}
			}
			OldObject json.RawMessage
		} `json:"request"`
	}
	if err := json.Unmarshal(body, &review); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	r := review.Request
	if review.APIVersion != "admission.k8s.io/v1beta1" || review.Kind != "AdmissionReview" || r.UID == "" ||
		r.Kind.Kind != "Pod" || r.Operation != "CREATE" || r.UserInfo.Username != "admin" ||
		r.Object.Metadata.Name != "web" || len(r.Object.Spec.Containers) != 1 || string(r.OldObject) != "null" {
		t.Errorf("ReviewBody = %s", body)
	}
	// Built-in objects go as their Go types encode them: the container's
	// resources, an empty struct, are there.
	if _, ok := r.Object.Spec.Containers[0]["resources"]; !ok {
		t.Errorf("the container is not in its typed form: %v", r.Object.Spec.Containers[0])
	}
}
