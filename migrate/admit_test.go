package migrate

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/mutatis-dev/mutatis/cluster"
)

func TestAdmit(t *testing.T) {
	sim, err := cluster.New(nil, cluster.Options{OnSynthesize: func(string) {}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, object string
		code         int32
	}{
		{name: "stored", object: "web"},
		{name: "refused by validation", object: "Web", code: 422},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": tc.object, "namespace": "default"},
			}}
			req := cluster.Request{Object: obj, Operation: admission.Create, User: &user.DefaultInfo{Name: "admin", Groups: []string{"system:masters"}}}
			out, err := Admit(context.Background(), sim, cluster.Chain{}, req)
			if err != nil {
				t.Fatal(err)
			}
			if out.Code != tc.code {
				t.Fatalf("Admit = %v, code %d; want code %d", out, out.Code, tc.code)
			}
			if tc.code == 0 && (out.Object == nil || out.Refused != "") {
				t.Errorf("Admit = %v, want the stored object", out)
			}
			if tc.code != 0 && (out.Object != nil || out.Refused == "") {
				t.Errorf("Admit = %v, want a refusal", out)
			}
		})
	}
}
