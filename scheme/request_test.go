package scheme

import (
	"fmt"
	"reflect"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mutatis-dev/mutatis/internal/testobjects"
	"github.com/mutatis-dev/mutatis/internal/valuetest"
)

// TestNormalizeRequestRefusesWhatTheDecoderRefuses: an object received in a
// request whose numbers do not fit their fields is refused with
// kube-apiserver's 400, the same text DecodeRequest gives, where Normalize
// (FromUnstructured) would wrap the integers around.
func TestNormalizeRequestRefusesWhatTheDecoderRefuses(t *testing.T) {
	s := New()
	pod := schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	for _, tc := range []struct {
		name string
		spec map[string]any
		want string
	}{
		{name: "an int32 out of range", spec: map[string]any{"priority": int64(3000000000), "containers": []any{}},
			want: `Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal number 3000000000 into Go struct field PodSpec.spec.priority of type int32`},
		{name: "an int64 out of range", spec: map[string]any{"terminationGracePeriodSeconds": 9223372036854775808.0, "containers": []any{}},
			want: `Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal number 9223372036854775808 into Go struct field PodSpec.spec.terminationGracePeriodSeconds of type int64`},
		{name: "a string where an integer belongs", spec: map[string]any{"priority": "high", "containers": []any{}},
			want: `Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal string into Go struct field PodSpec.spec.priority of type int32`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "web"}, "spec": tc.spec}
			_, err := s.NormalizeRequest(obj, pod)
			if !apierrors.IsBadRequest(err) || err.Error() != tc.want {
				t.Fatalf("NormalizeRequest: %v, want the 400 %q", err, tc.want)
			}
			_, _, derr := s.DecodeRequest(obj, pod)
			if fmt.Sprint(derr) != tc.want {
				t.Errorf("DecodeRequest says %v, NormalizeRequest %v: the request decoder is one", derr, err)
			}
		})
	}
}

// TestNormalizeRequestIsNormalizeOnRealObjects: on the objects a real API
// server sends, NormalizeRequest presents exactly what Normalize does.
func TestNormalizeRequestIsNormalizeOnRealObjects(t *testing.T) {
	s := New()
	for _, in := range testobjects.Inputs(t) {
		want, wantErr := s.Normalize(valuetest.DeepCopy(in.Obj).(map[string]any), in.GVK)
		got, err := s.NormalizeRequest(in.Obj, in.GVK)
		if err != nil || wantErr != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: NormalizeRequest = %v, %v; Normalize = %v, %v", in.Name, got, err, want, wantErr)
		}
	}
}
