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
