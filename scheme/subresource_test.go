package scheme

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
)

// TestValidateSubresourceUpdates updates subresources that carry their
// resource's kind: each goes through its own strategy, which keeps only
// its part of the object and takes the rest from the stored one (a label
// a policy adds on pods/ephemeralcontainers or pods/status is not stored).
func TestValidateSubresourceUpdates(t *testing.T) {
	s := New()
	for _, tc := range []struct {
		name, subresource string
		change            map[string]any
		fields            map[string]any
	}{{
		name: "pods/ephemeralcontainers keeps the ephemeral containers alone", subresource: "ephemeralcontainers",
		change: map[string]any{
			"metadata.labels":          map[string]any{"debug": "true"},
			"spec.ephemeralContainers": []any{map[string]any{"name": "debugger", "image": "busybox", "imagePullPolicy": "Always", "terminationMessagePolicy": "File", "terminationMessagePath": "/dev/termination-log"}},
		},
		fields: map[string]any{
			"metadata.labels":                  missing,
			"spec.ephemeralContainers[0].name": "debugger",
			"status.qosClass":                  "BestEffort",
		},
	}, {
		// The Pod status strategy takes the spec and owner references
		// from the stored Pod; labels may change.
		name: "pods/status keeps the status and the metadata", subresource: "status",
		change: map[string]any{"metadata.labels": map[string]any{"debug": "true"}, "spec.containers[0].image": "nginx:1.28", "status.phase": "Running"},
		fields: map[string]any{"metadata.labels": map[string]any{"debug": "true"}, "spec.containers[0].image": "nginx:1.27", "status.phase": "Running"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			old, gvk := stored(t, s, podSpecWith(`{"containers": [`+nginx+`]}`))
			nu := runtime.DeepCopyJSON(old)
			for p, v := range tc.change {
				set(t, nu, p, v)
			}
			req := requestFor(admission.Update, nu, gvk)
			req.Subresource = tc.subresource
			v, err := s.Validate(context.Background(), req, nu, old)
			if err != nil {
				t.Fatal(err)
			}
			if v == nil || v.Invalid != nil {
				t.Fatalf("not stored: %+v", v)
			}
			checkFields(t, v.Stored, tc.fields)
		})
	}
}

// TestValidateCustomResourceStatusUpdate: a custom resource's status
// subresource resets everything outside .status to the stored object's; a
// CREATE of the resource drops .status; an old object without a
// resourceVersion (a file) updates like a built-in kind's.
func TestValidateCustomResourceStatusUpdate(t *testing.T) {
	s := New()
	if err := s.CustomResources().Add(loadCRD(t, "widgets.yaml")); err != nil {
		t.Fatal(err)
	}
	created := obj(t, withSpec(`"size":1`))
	created["status"] = map[string]any{"phase": "Ready"}
	v, err := s.Validate(context.Background(), requestFor(admission.Create, created, widgetV1), created, nil)
	if err != nil || v == nil || v.Invalid != nil {
		t.Fatalf("create: %+v, %v", v, err)
	}
	checkFields(t, v.Stored, map[string]any{"status": missing})

	old := v.Stored
	nu := runtime.DeepCopyJSON(old)
	set(t, nu, "metadata.labels", map[string]any{"policy": "true"})
	set(t, nu, "spec.size", int64(2))
	nu["status"] = map[string]any{"phase": "Ready"}
	req := requestFor(admission.Update, nu, widgetV1)
	req.Subresource = "status"
	v, err = s.Validate(context.Background(), req, nu, old)
	if err != nil || v == nil || v.Invalid != nil {
		t.Fatalf("status update: %+v, %v", v, err)
	}
	checkFields(t, v.Stored, map[string]any{"metadata.labels": missing, "spec.size": int64(1), "status.phase": "Ready"})

	// The same UPDATE of the resource itself, neither object with a
	// resourceVersion: accepted, as for a built-in kind.
	v, err = s.Validate(context.Background(), requestFor(admission.Update, nu, widgetV1), nu, old)
	if err != nil || v == nil || v.Invalid != nil {
		t.Fatalf("update: %+v, %v", v, err)
	}
	checkFields(t, v.Stored, map[string]any{"metadata.labels": map[string]any{"policy": "true"}, "spec.size": int64(2), "status": missing, "metadata.resourceVersion": missing})
}

// TestValidateServiceMadeExternalName: a Service a policy turns into an
// ExternalName one keeps the internalTrafficPolicy decoding defaulted
// until the store returns it: its Decorator (defaultOnRead) drops it
// (test/e2e case 44-*).
func TestValidateServiceMadeExternalName(t *testing.T) {
	s := New()
	o, gvk := decoded(t, s, serviceWith(`{"selector": {"app": "web"}, "ports": [{"port": 80}]}`))
	set(t, o, "spec.type", "ExternalName")
	set(t, o, "spec.externalName", "web.example.com")
	o, err := s.Default(o, gvk)
	if err != nil {
		t.Fatal(err)
	}
	if at(o, "spec.internalTrafficPolicy") != "Cluster" {
		t.Fatalf("decoding did not default internalTrafficPolicy: %v", o["spec"])
	}
	v := validateCreate(t, s, o, gvk)
	if v.Invalid != nil {
		t.Fatal(v.Invalid)
	}
	checkFields(t, v.Stored, map[string]any{"spec.internalTrafficPolicy": missing, "spec.type": "ExternalName", "spec.clusterIP": missing})
}
