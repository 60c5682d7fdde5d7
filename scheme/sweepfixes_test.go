package scheme

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
)

// TestStrategiesFoundBySweep: what test/e2e TestKindSweep found the
// registry does on CREATE that mutatis did not (docs/fidelity.md, "The
// kind sweep"), as kube-apiserver 1.37.1 stores it there.
func TestStrategiesFoundBySweep(t *testing.T) {
	s := New()
	admin := &user.DefaultInfo{Name: "admin", UID: "admin-uid", Groups: []string{"system:masters", "system:authenticated"}}
	for _, tc := range []struct {
		name string
		body string
		user user.Info
		// path and want: a field of the stored object.
		path []string
		want any
	}{
		{
			// The strategy copies the requester into the spec.
			name: "a CertificateSigningRequest gets its requester's name, uid and groups",
			body: `{"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest", "metadata": {"name": "csr"}, "spec": {"request": "` + testCSR(t) + `", "signerName": "example.com/signer", "usages": ["digital signature"]}}`,
			user: admin,
			path: []string{"spec"},
			want: map[string]any{"username": "admin", "uid": "admin-uid", "groups": []any{"system:masters", "system:authenticated"}},
		},
		{
			name: "a DeviceTaintRule gets its generation",
			body: `{"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": "taint"}, "spec": {"deviceSelector": {"driver": "dra.example.com"}, "taint": {"key": "example.com/broken", "effect": "NoSchedule"}}}`,
			path: []string{"metadata", "generation"},
			want: int64(1),
		},
		{
			name: "an EndpointSlice gets its generation",
			body: `{"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": {"name": "web", "namespace": "default"}, "addressType": "IPv4", "endpoints": [{"addresses": ["10.0.0.1"]}], "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}`,
			path: []string{"metadata", "generation"},
			want: int64(1),
		},
		{
			name: "a FlowSchema gets its generation",
			body: `{"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema", "metadata": {"name": "fs"}, "spec": {"priorityLevelConfiguration": {"name": "global-default"}, "matchingPrecedence": 1000}}`,
			path: []string{"metadata", "generation"},
			want: int64(1),
		},
		{
			name: "a PriorityLevelConfiguration gets its generation",
			body: `{"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration", "metadata": {"name": "plc"}, "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 5, "limitResponse": {"type": "Reject"}}}}`,
			path: []string{"metadata", "generation"},
			want: int64(1),
		},
		{
			name: "a MutatingWebhookConfiguration gets its generation",
			body: `{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration", "metadata": {"name": "mwc"}, "webhooks": [{"name": "w.example.com", "clientConfig": {"url": "https://example.com/mutate"}, "sideEffects": "None", "admissionReviewVersions": ["v1"]}]}`,
			path: []string{"metadata", "generation"},
			want: int64(1),
		},
		{
			name: "a ValidatingWebhookConfiguration gets its generation",
			body: `{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration", "metadata": {"name": "vwc"}, "webhooks": [{"name": "w.example.com", "clientConfig": {"url": "https://example.com/validate"}, "sideEffects": "None", "admissionReviewVersions": ["v1"]}]}`,
			path: []string{"metadata", "generation"},
			want: int64(1),
		},
		{
			name: "a MutatingAdmissionPolicy gets its generation",
			body: `{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicy", "metadata": {"name": "map"}, "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}]}, "reinvocationPolicy": "Never", "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": "[JSONPatch{op: \"add\", path: \"/metadata/labels\", value: {\"a\": \"b\"}}]"}}]}}`,
			path: []string{"metadata", "generation"},
			want: int64(1),
		},
		{
			name: "a MutatingAdmissionPolicyBinding gets its generation",
			body: `{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicyBinding", "metadata": {"name": "mapb"}, "spec": {"policyName": "map", "paramRef": {"name": "p", "parameterNotFoundAction": "Deny"}}}`,
			path: []string{"metadata", "generation"},
			want: int64(1),
		},
		{
			name: "a ValidatingAdmissionPolicy gets its generation",
			body: `{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "vap"}, "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}]}, "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"}, "validations": [{"expression": "true"}]}}`,
			path: []string{"metadata", "generation"},
			want: int64(1),
		},
		{
			name: "a ValidatingAdmissionPolicyBinding gets its generation",
			body: `{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": "vapb"}, "spec": {"policyName": "vap", "validationActions": ["Deny"], "paramRef": {"name": "p", "parameterNotFoundAction": "Deny"}}}`,
			path: []string{"metadata", "generation"},
			want: int64(1),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, gvk := decoded(t, s, tc.body)
			req := requestFor(admission.Create, o, gvk)
			req.User = tc.user
			v, err := s.Validate(context.Background(), req, o, nil)
			if err != nil {
				t.Fatal(err)
			}
			if v == nil || v.Invalid != nil {
				t.Fatalf("not validated or refused: %+v", v)
			}
			got, _, _ := unstructured.NestedFieldNoCopy(v.Stored, tc.path...)
			if m, ok := tc.want.(map[string]any); ok {
				gm, _ := got.(map[string]any)
				for k, w := range m {
					if !reflect.DeepEqual(gm[k], w) {
						t.Errorf("%v.%s = %#v, want %#v", tc.path, k, gm[k], w)
					}
				}
				return
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("%v = %#v, want %#v", tc.path, got, tc.want)
			}
		})
	}
}

// TestStrategiesRefuseFoundBySweep: objects test/e2e TestKindSweep found
// kube-apiserver 1.37.1 refuses with its registry's validation, refused
// with the same message.
func TestStrategiesRefuseFoundBySweep(t *testing.T) {
	s := New()
	for _, tc := range []struct {
		name, body, want string
	}{
		{
			name: "an Endpoints port 0",
			body: `{"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "web", "namespace": "default"}, "subsets": [{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 0}]}]}`,
			want: `Endpoints "web" is invalid: subsets[0].ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive`,
		},
		{
			name: "a FlowSchema without its priority level",
			body: `{"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema", "metadata": {"name": "fs"}, "spec": {"matchingPrecedence": 1000}}`,
			want: `FlowSchema.flowcontrol.apiserver.k8s.io "fs" is invalid: spec.priorityLevelConfiguration.name: Required value: must reference a priority level`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, gvk := decoded(t, s, tc.body)
			v, err := s.Validate(context.Background(), requestFor(admission.Create, o, gvk), o, nil)
			if err != nil {
				t.Fatal(err)
			}
			if v == nil || v.Invalid == nil {
				t.Fatalf("not refused: %+v", v)
			}
			if got := v.Invalid.Error(); got != tc.want {
				t.Errorf("refused with\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// testCSR is a fresh PEM certificate request, base64 encoded as a
// CertificateSigningRequest's spec.request.
func testCSR(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "sweep"}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))
}
