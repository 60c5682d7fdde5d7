// Package certs makes and reads the TLS material of the mutatis webhook: a
// self-signed CA and a serving certificate it signs (ECDSA P-256), written
// as PEM files with the names Kubernetes TLS Secrets use, so that a
// directory made here can be mounted from a Secret unchanged.
//
// It depends on nothing but the standard library, so that `mutatis serve
// --self-signed-dir`, `mutatis certs` and deployment tooling share it.
package certs

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// File names inside a certificate directory.
const (
	CACertFile = "ca.crt"
	CAKeyFile  = "ca.key"
	CertFile   = "tls.crt"
	KeyFile    = "tls.key"
)

// CAValidity is how long a generated CA is valid. It outlives the serving
// certificates it signs so that rotating those keeps the caBundle of the
// webhook configuration.
const CAValidity = 10 * 365 * 24 * time.Hour

// DefaultHosts returns the names of a serving certificate for local use.
func DefaultHosts() []string { return []string{"localhost", "127.0.0.1"} }

// Paths are the files of a certificate directory.
type Paths struct {
	CACert, CAKey, Cert, Key string
}

// PathsIn returns the file paths inside dir.
func PathsIn(dir string) Paths {
	return Paths{
		CACert: filepath.Join(dir, CACertFile),
		CAKey:  filepath.Join(dir, CAKeyFile),
		Cert:   filepath.Join(dir, CertFile),
		Key:    filepath.Join(dir, KeyFile),
	}
}

// Options say what to generate.
type Options struct {
	// Hosts are the DNS names and IP addresses of the serving certificate;
	// empty means DefaultHosts().
	Hosts []string
	// Validity of the serving certificate; zero means one year.
	Validity time.Duration
	// Now is the time the certificates start being valid; zero means
	// time.Now().
	Now time.Time
}

func (o Options) withDefaults() Options {
	if len(o.Hosts) == 0 {
		o.Hosts = DefaultHosts()
	}
	if o.Validity <= 0 {
		o.Validity = 365 * 24 * time.Hour
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	return o
}

// Outcome tells what Generate and Ensure did.
type Outcome struct {
	Paths Paths
	// NewCA is true when a new CA was made (its certificate must then be
	// distributed again, e.g. as the webhook's caBundle).
	NewCA bool
	// NewCert is true when a new serving certificate was made.
	NewCert bool
}

// Generate writes a serving certificate for o.Hosts into dir, signed by
// the CA found in dir when that CA is valid for the whole validity of the
// new certificate, or by a new CA otherwise. dir is created if needed; keys
// are written with mode 0600, and every file is replaced atomically so that
// a server reloading them never reads half a file.
func Generate(dir string, o Options) (Outcome, error) {
	o = o.withDefaults()
	p := PathsIn(dir)
	out := Outcome{Paths: p}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return out, err
	}
	ca, caKey, err := loadCA(p)
	if err != nil || o.Now.Add(o.Validity).After(ca.NotAfter) || o.Now.Before(ca.NotBefore) {
		if ca, caKey, err = newCA(p, o.Now); err != nil {
			return out, err
		}
		out.NewCA = true
	}
	if err := newServingCert(p, ca, caKey, o); err != nil {
		return out, err
	}
	out.NewCert = true
	return out, nil
}

// Ensure keeps the certificates in dir when the serving certificate is
// signed by the CA there, covers every host of o.Hosts and stays valid for
// at least a tenth of o.Validity more; otherwise it calls Generate.
func Ensure(dir string, o Options) (Outcome, error) {
	o = o.withDefaults()
	p := PathsIn(dir)
	if err := Check(p, o.Hosts, o.Now.Add(o.Validity/10)); err == nil {
		return Outcome{Paths: p}, nil
	}
	return Generate(dir, o)
}

// Check verifies that the serving certificate of p is signed by the CA of
// p, matches its key, names every host and is still valid at until.
func Check(p Paths, hosts []string, until time.Time) error {
	ca, _, err := loadCA(p)
	if err != nil {
		return err
	}
	pair, err := readFiles(p.Cert, p.Key)
	if err != nil {
		return err
	}
	cert, err := parseCertificate(pair[0])
	if err != nil {
		return fmt.Errorf("%s: %w", p.Cert, err)
	}
	key, err := parseKey(pair[1])
	if err != nil {
		return fmt.Errorf("%s: %w", p.Key, err)
	}
	if !key.PublicKey.Equal(cert.PublicKey) {
		return fmt.Errorf("%s does not match %s", p.Key, p.Cert)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	for _, h := range hosts {
		if _, err := cert.Verify(x509.VerifyOptions{DNSName: h, Roots: roots, CurrentTime: until}); err != nil {
			return fmt.Errorf("%s: %w", p.Cert, err)
		}
	}
	return nil
}

// LoadPool reads the PEM certificates of file into a pool (for
// --client-ca-file).
func LoadPool(file string) (*x509.CertPool, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("%s: no PEM certificate found", file)
	}
	return pool, nil
}

func loadCA(p Paths) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	pair, err := readFiles(p.CACert, p.CAKey)
	if err != nil {
		return nil, nil, err
	}
	ca, err := parseCertificate(pair[0])
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", p.CACert, err)
	}
	if !ca.IsCA {
		return nil, nil, fmt.Errorf("%s is not a CA certificate", p.CACert)
	}
	key, err := parseKey(pair[1])
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", p.CAKey, err)
	}
	if !key.PublicKey.Equal(ca.PublicKey) {
		return nil, nil, fmt.Errorf("%s does not match %s", p.CAKey, p.CACert)
	}
	return ca, key, nil
}

func readFiles(files ...string) ([][]byte, error) {
	out := make([][]byte, len(files))
	for i, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		out[i] = data
	}
	return out, nil
}

func parseCertificate(data []byte) (*x509.Certificate, error) {
	b, _ := pem.Decode(data)
	if b == nil || b.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM CERTIFICATE block")
	}
	return x509.ParseCertificate(b.Bytes)
}

func parseKey(data []byte) (*ecdsa.PrivateKey, error) {
	b, _ := pem.Decode(data)
	if b == nil {
		return nil, errors.New("no PEM block")
	}
	switch b.Type {
	case "EC PRIVATE KEY":
		return x509.ParseECPrivateKey(b.Bytes)
	case "PRIVATE KEY":
		k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
		if err != nil {
			return nil, err
		}
		ec, ok := k.(*ecdsa.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("key is a %T, not ECDSA", k)
		}
		return ec, nil
	}
	return nil, fmt.Errorf("unexpected PEM block %q", b.Type)
}

// newKeyAndSerial is a new P-256 key and a random certificate serial.
func newKeyAndSerial() (*ecdsa.PrivateKey, *big.Int, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, nil, err
	}
	return key, serial, nil
}

func newCA(p Paths, now time.Time) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, serial, err := newKeyAndSerial()
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "mutatis webhook CA", Organization: []string{"mutatis"}},
		NotBefore:             now.Add(-time.Hour), // tolerate clock skew
		NotAfter:              now.Add(CAValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, err
	}
	if err := writePEM(p.CAKey, "EC PRIVATE KEY", marshalEC(key), 0o600); err != nil {
		return nil, nil, err
	}
	if err := writePEM(p.CACert, "CERTIFICATE", der, 0o644); err != nil {
		return nil, nil, err
	}
	return ca, key, nil
}

func newServingCert(p Paths, ca *x509.Certificate, caKey *ecdsa.PrivateKey, o Options) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	serial, err := serialNumber()
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: o.Hosts[0], Organization: []string{"mutatis"}},
		NotBefore:    o.Now.Add(-time.Hour),
		NotAfter:     o.Now.Add(o.Validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range o.Hosts {
		h = strings.TrimSpace(h)
		if h == "" {
			continue
		}
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	// The key first: a reloading server that sees the new certificate
	// with the old key retries at its next handshake.
	if err := writePEM(p.Key, "EC PRIVATE KEY", marshalEC(key), 0o600); err != nil {
		return err
	}
	return writePEM(p.Cert, "CERTIFICATE", der, 0o644)
}

// ClientCertificate issues a client certificate for name signed by the CA
// in dir (for tests and for clients of a server started with
// --client-ca-file), returning PEM certificate and key.
func ClientCertificate(dir, name string, validity time.Duration) (certPEM, keyPEM []byte, err error) {
	ca, caKey, err := loadCA(PathsIn(dir))
	if err != nil {
		return nil, nil, err
	}
	key, serial, err := newKeyAndSerial()
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: marshalEC(key)}), nil
}

func serialNumber() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
}

func marshalEC(key *ecdsa.PrivateKey) []byte {
	// MarshalECPrivateKey fails only for curves x509 does not know; P-256
	// is one it knows.
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil
	}
	return der
}

// writePEM replaces file atomically (temporary file and rename).
func writePEM(file, blockType string, der []byte, mode os.FileMode) error {
	if der == nil {
		return fmt.Errorf("%s: nothing to write", file)
	}
	var buf bytes.Buffer
	if err := pem.Encode(&buf, &pem.Block{Type: blockType, Bytes: der}); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	if _, err := tmp.Write(buf.Bytes()); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), file)
}
