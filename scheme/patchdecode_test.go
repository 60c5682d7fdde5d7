package scheme

import (
	"encoding/json"
	"reflect"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	jsonserializer "k8s.io/apimachinery/pkg/runtime/serializer/json"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// upstreamDecode is kube-apiserver's decode after a JSON patch.
func upstreamDecode(t *testing.T, data []byte, gvk schema.GroupVersionKind) (map[string]any, error) {
	s := jsonserializer.NewSerializerWithOptions(jsonserializer.DefaultMetaFactory, clientgoscheme.Scheme, clientgoscheme.Scheme,
		jsonserializer.SerializerOptions{Strict: true})
	var into runtime.Object = &unstructured.Unstructured{}
	if clientgoscheme.Scheme.Recognizes(gvk) {
		obj, err := clientgoscheme.Scheme.New(gvk)
		if err != nil {
			t.Fatal(err)
		}
		into = obj
	}
	out, _, err := s.Decode(data, nil, into)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if u, ok := out.(*unstructured.Unstructured); ok {
		return u.Object, nil
	}
	return runtime.DefaultUnstructuredConverter.ToUnstructured(out)
}

func TestDecodeMatchesStrictSerializer(t *testing.T) {
	pod := schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	deploy := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	cm := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	widget := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	tests := []struct {
		name    string
		gvk     schema.GroupVersionKind
		doc     string
		wantErr bool
	}{
		{name: "valid pod", gvk: pod, doc: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","creationTimestamp":null},"spec":{"containers":[{"name":"c","image":"i","resources":{"limits":{"cpu":"1000m"}}}]}}`},
		{name: "pod with unknown fields", gvk: pod, wantErr: true, doc: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","foo":1},"spec":{"containers":[{"name":"c","bar":true}]},"zed":{}}`},
		{name: "pod with a wrong type", gvk: pod, wantErr: true, doc: `{"apiVersion":"v1","kind":"Pod","spec":{"containers":{"name":"c"}}}`},
		{name: "pod with a string for an int", gvk: pod, wantErr: true, doc: `{"apiVersion":"v1","kind":"Pod","spec":{"containers":[{"name":"c","ports":[{"containerPort":"80"}]}]}}`},
		{name: "pod with a float for an int", gvk: pod, wantErr: true, doc: `{"apiVersion":"v1","kind":"Pod","spec":{"terminationGracePeriodSeconds":1.5}}`},
		{name: "pod with case-mismatched field", gvk: pod, wantErr: true, doc: `{"apiVersion":"v1","kind":"Pod","Spec":{}}`},
		{name: "pod without kind is defaulted", gvk: pod, doc: `{"metadata":{"name":"p"}}`},
		{name: "pod request decodes another registered kind as that kind", gvk: pod, doc: `{"apiVersion":"v1","kind":"Service"}`},
		{name: "deployment with unknown and wrong fields", gvk: deploy, wantErr: true, doc: `{"apiVersion":"apps/v1","kind":"Deployment","spec":{"replicas":"3","x":1}}`},
		{name: "deployment with a null selector", gvk: deploy, doc: `{"apiVersion":"apps/v1","kind":"Deployment","spec":{"replicas":3,"selector":null}}`},
		{name: "configmap with a number in data", gvk: cm, wantErr: true, doc: `{"apiVersion":"v1","kind":"ConfigMap","data":{"a":1}}`},
		{name: "configmap with an unknown field", gvk: cm, wantErr: true, doc: `{"apiVersion":"v1","kind":"ConfigMap","dta":{"a":"b"}}`},
		{name: "configmap with bad base64", gvk: cm, wantErr: true, doc: `{"apiVersion":"v1","kind":"ConfigMap","binaryData":{"a":"%%"}}`},
		{name: "valid widget", gvk: widget, doc: `{"apiVersion":"example.com/v1","kind":"Widget","spec":{"n":1,"f":1.5,"s":"<"}}`},
		{name: "widget without kind", gvk: widget, wantErr: true, doc: `{"apiVersion":"example.com/v1","spec":{"s":"<&>"}}`},
		{name: "widget with empty kind", gvk: widget, wantErr: true, doc: `{"apiVersion":"example.com/v1","kind":""}`},
		{name: "widget with a bad apiVersion", gvk: widget, wantErr: true, doc: `{"apiVersion":"a/b/c","kind":"Widget"}`},
		{name: "widget without apiVersion", gvk: widget, doc: `{"kind":"Widget"}`},
		{name: "widget with a numeric apiVersion", gvk: widget, wantErr: true, doc: `{"apiVersion":1,"kind":"Widget"}`},
		{name: "widget with a null kind", gvk: widget, wantErr: true, doc: `{"apiVersion":"example.com/v1","kind":null}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := obj(t, tc.doc)
			data, err := json.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			want, wantErr := upstreamDecode(t, data, tc.gvk)
			got, gotErr := decodeReference(doc, tc.gvk, nil)
			if (wantErr != nil) != tc.wantErr {
				t.Fatalf("upstream error %v, wantErr %v", wantErr, tc.wantErr)
			}
			if wantErr != nil || gotErr != nil {
				if wantErr == nil || gotErr == nil || wantErr.Error() != gotErr.Error() {
					t.Fatalf("errors differ:\nDecode:   %v\nupstream: %v", gotErr, wantErr)
				}
				if !apierrors.IsInternalError(gotErr) {
					t.Fatalf("not an internal error: %#v", gotErr)
				}
				return
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("results differ:\nDecode:   %#v\nupstream: %#v", got, want)
			}
		})
	}
}
