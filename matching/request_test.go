package matching

import (
	"testing"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	admissioncel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/authentication/user"
)

// TestAdmissionRequestMatchesUpstream holds AdmissionRequest (one
// allocation for the request and what its pointers point to) to
// k8s.io/apiserver's CreateAdmissionRequest, the policies' "request", over
// users with and without extras, dry runs, options and subresources,
// matched in the request's resource and kind and in another.
func TestAdmissionRequestMatchesUpstream(t *testing.T) {
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	pod := schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	deploys := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	deploy := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	users := []user.Info{nil, &user.DefaultInfo{}, &user.DefaultInfo{Name: "alice", UID: "u1", Groups: []string{"g1", "g2"},
		Extra: map[string][]string{"scopes": {"a", "b"}, "empty": nil}}}
	opts := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions", "fieldManager": "m"}}
	for _, u := range users {
		for _, dry := range []bool{false, true} {
			for _, sub := range []string{"", "status"} {
				a := &Attributes{Operation: admission.Create, Kind: pod, Resource: pods, Subresource: sub, Name: "p", Namespace: "ns",
					UserInfo: u, DryRun: dry, Options: opts}
				if u == nil {
					a.Options = nil
				}
				for _, m := range []struct {
					gvr schema.GroupVersionResource
					gvk schema.GroupVersionKind
				}{{pods, pod}, {deploys, deploy}} {
					got := a.AdmissionRequest(m.gvr, m.gvk)
					attrs := a.AdmissionAttributes()
					if u == nil {
						// Upstream's attributes always carry a user.
						attrs = admission.NewAttributesRecord(nil, nil, a.Kind, a.Namespace, a.Name, a.Resource, a.Subresource, a.Operation, a.options(), a.DryRun, nil)
					}
					want := admissioncel.CreateAdmissionRequest(attrs, metav1.GroupVersionResource(m.gvr), metav1.GroupVersionKind(m.gvk))
					if !apiequality.Semantic.DeepEqual(got, want) {
						t.Errorf("user %v dryRun %v subresource %q as %v:\n got %+v\nwant %+v", u, dry, sub, m.gvk, got, want)
					}
				}
			}
		}
	}
}
