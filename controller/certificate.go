package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	certutil "k8s.io/client-go/util/cert"
)

// Certificate is a PEM serving certificate with its key and the CA bundle
// kube-apiserver verifies it with.
type Certificate struct {
	CertPEM, KeyPEM, CABundle []byte
}

// EnsureSelfSignedCertificate returns the certificate held by Secret
// namespace/name, filling the Secret first with a new self-signed
// certificate for dnsNames[0] (and the other dnsNames) when it holds none
// (deploy/self-signed). Replicas racing to fill it agree: the update is
// conditional on the Secret's resourceVersion and the loser reads the
// winner's certificate. The Secret must exist.
func EnsureSelfSignedCertificate(ctx context.Context, kube kubernetes.Interface, namespace, name string, dnsNames []string) (Certificate, error) {
	if len(dnsNames) == 0 {
		return Certificate{}, fmt.Errorf("self-signed certificate: no DNS name")
	}
	secrets := kube.CoreV1().Secrets(namespace)
	for attempt := 0; attempt < 3; attempt++ {
		s, err := secrets.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return Certificate{}, fmt.Errorf("reading Secret %s/%s: %w", namespace, name, err)
		}
		if c, ok := certificateFrom(s); ok {
			return c, nil
		}
		certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(dnsNames[0], nil, dnsNames[1:])
		if err != nil {
			return Certificate{}, fmt.Errorf("generating a self-signed certificate: %w", err)
		}
		s = s.DeepCopy()
		if s.Data == nil {
			s.Data = map[string][]byte{}
		}
		// The chain (serving certificate, then its self-signed CA) is its
		// own CA bundle.
		s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey], s.Data["ca.crt"] = certPEM, keyPEM, certPEM
		if _, err := secrets.Update(ctx, s, metav1.UpdateOptions{}); err != nil {
			if apierrors.IsConflict(err) {
				continue
			}
			return Certificate{}, fmt.Errorf("writing Secret %s/%s: %w", namespace, name, err)
		}
		return Certificate{CertPEM: certPEM, KeyPEM: keyPEM, CABundle: certPEM}, nil
	}
	return Certificate{}, fmt.Errorf("Secret %s/%s keeps changing", namespace, name)
}

func certificateFrom(s *corev1.Secret) (Certificate, bool) {
	c := Certificate{CertPEM: s.Data[corev1.TLSCertKey], KeyPEM: s.Data[corev1.TLSPrivateKeyKey], CABundle: s.Data["ca.crt"]}
	if len(c.CertPEM) == 0 || len(c.KeyPEM) == 0 {
		return Certificate{}, false
	}
	if len(c.CABundle) == 0 {
		c.CABundle = c.CertPEM
	}
	return c, true
}
