package applyconfig

import (
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
)

// kube-apiserver hands built-in objects to the patcher as Go structs; the
// engine hands Merge their unstructured form. After decoding both results back
// into the Go type (as the MAP dispatcher does), they must be the same object.
func TestMergeOfUnstructuredEqualsUpstreamOnTypedObject(t *testing.T) {
	s := sharedSchemas(t)
	tc, err := s.TypeConverter(deploymentGVK)
	if err != nil {
		t.Fatal(err)
	}
	var typed appsv1.Deployment
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(fromYAML(t, liveDeployment), &typed); err != nil {
		t.Fatal(err)
	}
	for _, c := range mergeCases() {
		if c.live != liveDeployment || c.wantErr != "" {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			liveU, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed.DeepCopy())
			if err != nil {
				t.Fatal(err)
			}
			got, err := Merge(tc, &unstructured.Unstructured{Object: liveU}, fromYAML(t, c.patch))
			if err != nil {
				t.Fatal(err)
			}
			p := &unstructured.Unstructured{Object: fromYAML(t, c.patch)}
			p.SetGroupVersionKind(deploymentGVK)
			want, err := patch.ApplyStructuredMergeDiff(tc, typed.DeepCopy(), p)
			if err != nil {
				t.Fatal(err)
			}
			var gotD, wantD appsv1.Deployment
			gotErr := runtime.DefaultUnstructuredConverter.FromUnstructured(got.Object, &gotD)
			wantErr := runtime.DefaultUnstructuredConverter.FromUnstructured(want.(*unstructured.Unstructured).Object, &wantD)
			if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
				t.Fatalf("decoding: mutatis %v, upstream %v", gotErr, wantErr)
			}
			if !equality.Semantic.DeepEqual(gotD, wantD) {
				t.Fatalf("typed results differ:\n%s", fmt.Sprintf("%#v\n%#v", gotD, wantD))
			}
		})
	}
}
