package scheme

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
)

// crdInterfaces are the ObjectInterfaces the CRD handler gives a request
// for a custom resource (customresource_handler.go: unstructuredCreator and
// the CRD's safe converter); only the creater and the convertor are read
// by admission.ConvertToGVK.
type crdInterfaces struct {
	admission.ObjectInterfaces
	convertor runtime.ObjectConvertor
}

func (c crdInterfaces) GetObjectCreater() runtime.ObjectCreater     { return crdCreater{} }
func (c crdInterfaces) GetObjectConvertor() runtime.ObjectConvertor { return c.convertor }

// crdCreater is customresource_handler.go's unstructuredCreator.
type crdCreater struct{}

func (crdCreater) New(kind schema.GroupVersionKind) (runtime.Object, error) {
	ret := &unstructured.Unstructured{}
	ret.SetGroupVersionKind(kind)
	return ret, nil
}

// TestConvertToGVKIsUpstreams holds the presenter of a request's objects
// in a matched version to k8s.io/apiserver's admission.ConvertToGVK with
// the ObjectInterfaces kube-apiserver gives the request: its scheme for a
// built-in kind (fed, as the admission chain feeds it, the internal
// object), the CRD handler's for a custom resource. Results must be the
// same object, errors the same message.
func TestConvertToGVKIsUpstreams(t *testing.T) {
	s := New()
	if err := s.AddCRD(loadCRD(t, "widgets.yaml")); err != nil {
		t.Fatal(err)
	}
	kube, err := Kube()
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(loadCRD(t, "widgets.yaml").Object, crd); err != nil {
		t.Fatal(err)
	}
	crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter} // the API server's default
	safe, _, err := noneConverterFactory.NewConverter(crd)
	if err != nil {
		t.Fatal(err)
	}
	builtin := admission.NewObjectInterfacesFromScheme(kube)
	custom := crdInterfaces{convertor: safe}

	hpaV1 := schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "HorizontalPodAutoscaler"}
	hpaV2 := schema.GroupVersionKind{Group: "autoscaling", Version: "v2", Kind: "HorizontalPodAutoscaler"}
	eventV1 := schema.GroupVersionKind{Version: "v1", Kind: "Event"}
	eventsV1 := schema.GroupVersionKind{Group: "events.k8s.io", Version: "v1", Kind: "Event"}
	deployV1 := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	deployV9 := schema.GroupVersionKind{Group: "apps", Version: "v9", Kind: "Deployment"}

	hpa := `{"apiVersion":"autoscaling/v1","kind":"HorizontalPodAutoscaler","metadata":{"name":"h","namespace":"default"},
		"spec":{"scaleTargetRef":{"kind":"Deployment","name":"web","apiVersion":"apps/v1"},"minReplicas":1,"maxReplicas":5,"targetCPUUtilizationPercentage":60}}`
	hpa2 := `{"apiVersion":"autoscaling/v2","kind":"HorizontalPodAutoscaler","metadata":{"name":"h","namespace":"default"},
		"spec":{"scaleTargetRef":{"kind":"Deployment","name":"web","apiVersion":"apps/v1"},"minReplicas":1,"maxReplicas":5,
		"metrics":[{"type":"Resource","resource":{"name":"cpu","target":{"type":"Utilization","averageUtilization":70}}}]}}`
	event := `{"apiVersion":"v1","kind":"Event","metadata":{"name":"e","namespace":"default"},"involvedObject":{"kind":"Pod","name":"p"},"reason":"Started","message":"started","type":"Normal"}`
	deploy := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","namespace":"default"},"spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}}}}}`
	widget := `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"default"},"spec":{"size":3}}`

	for _, tc := range []struct {
		name     string
		obj      string
		from, to schema.GroupVersionKind
		wantErr  bool
	}{
		{name: "built-in: the same kind is the object itself", obj: deploy, from: deployV1, to: deployV1},
		{name: "built-in to built-in: HPA v1 as v2", obj: hpa, from: hpaV1, to: hpaV2},
		{name: "built-in to built-in: HPA v2 as v1", obj: hpa2, from: hpaV2, to: hpaV1},
		{name: "built-in to built-in across groups: core Event as events.k8s.io", obj: event, from: eventV1, to: eventsV1},
		{name: "custom resource to another version of its CRD", obj: widget, from: widgetV1, to: widgetV2},
		{name: "built-in to a version its scheme does not know fails", obj: deploy, from: deployV1, to: deployV9, wantErr: true},
		{name: "built-in to a custom resource fails", obj: deploy, from: deployV1, to: widgetV1, wantErr: true},
		{name: "custom resource to a built-in kind fails", obj: widget, from: widgetV1, to: deployV1, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := obj(t, tc.obj)
			got, gotErr := s.ConvertToGVK(in, tc.from, tc.to)

			var want runtime.Object
			var wantErr error
			if s.Recognizes(tc.from) {
				internal, err := s.Internal(in, tc.from)
				if err != nil {
					t.Fatal(err)
				}
				if tc.from == tc.to {
					// Upstream's request object is internal: converted even
					// to the request's own kind; ours is already in it.
					want = &unstructured.Unstructured{Object: in}
				} else {
					want, wantErr = admission.ConvertToGVK(internal, tc.to, builtin)
				}
			} else {
				want, wantErr = admission.ConvertToGVK(&unstructured.Unstructured{Object: in}, tc.to, custom)
			}
			if (wantErr != nil) != tc.wantErr {
				t.Fatalf("upstream error %v, want error: %v (the case no longer tests what it names)", wantErr, tc.wantErr)
			}
			if wantErr != nil {
				if gotErr == nil || gotErr.Error() != wantErr.Error() {
					t.Fatalf("error\n got: %v\nwant: %v", gotErr, wantErr)
				}
				return
			}
			if gotErr != nil {
				t.Fatalf("error %v, upstream converted", gotErr)
			}
			wantMap, err := runtime.DefaultUnstructuredConverter.ToUnstructured(want)
			if err != nil {
				t.Fatal(err)
			}
			if g, w := mustJSON(got), mustJSON(wantMap); g != w {
				t.Errorf("object\n got: %s\nwant: %s", g, w)
			}
			if mustJSON(in) != mustJSON(obj(t, tc.obj)) {
				t.Error("the input was modified")
			}
		})
	}
	t.Run("nil presents as nil", func(t *testing.T) {
		if got, err := s.ConvertToGVK(nil, hpaV1, hpaV2); got != nil || err != nil {
			t.Errorf("got %v, %v", got, err)
		}
	})
}
