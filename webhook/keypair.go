package webhook

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// Keypair serves a certificate and key read from files and reads them
// again when they change, so that a rotated certificate (a renewed Secret,
// cert-manager, `mutatis certs`) is used without a restart.
//
// Every TLS handshake stats both files (two stat calls, no reads); when the
// size, modification time or identity (inode, as after the atomic symlink
// swap of a mounted Secret) of either changed, the pair is read again. A
// pair that does not load (say, the certificate was replaced and the key
// not yet) leaves the previous one in service and is tried again at the
// next handshake. Checking at handshake time, rather than on a timer,
// means no new connection ever sees a stale certificate once the files
// are complete.
type Keypair struct {
	certFile, keyFile string
	log               *slog.Logger

	mu       sync.Mutex
	cert     *tls.Certificate
	certStat fileStamp
	keyStat  fileStamp
	// failed are the stamps of the last pair that did not load, so that a
	// broken pair is read (and logged) once, not at every handshake.
	failed [2]fileStamp
}

// fileStamp is what tells that a file changed.
type fileStamp struct {
	info os.FileInfo
}

func (s fileStamp) same(info os.FileInfo) bool {
	return s.info != nil && info != nil && os.SameFile(s.info, info) &&
		s.info.Size() == info.Size() && s.info.ModTime().Equal(info.ModTime())
}

// NewKeypair loads certFile and keyFile (PEM). log receives reload
// failures and successes; nil discards them.
func NewKeypair(certFile, keyFile string, log *slog.Logger) (*Keypair, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	k := &Keypair{certFile: certFile, keyFile: keyFile, log: log}
	if err := k.reload(); err != nil {
		return nil, err
	}
	return k, nil
}

// GetCertificate implements tls.Config.GetCertificate.
func (k *Keypair) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if ci, ki, ok := k.changed(); ok {
		if err := k.reloadLocked(); err != nil {
			k.failed = [2]fileStamp{{ci}, {ki}}
			k.log.Warn("keeping the previous TLS certificate", "error", err)
		} else {
			k.log.Info("reloaded TLS certificate", "cert", k.certFile, "notAfter", k.cert.Leaf.NotAfter.Format(time.RFC3339))
		}
	}
	return k.cert, nil
}

// changed stats the files and tells whether they differ from the loaded
// pair and from the last pair that failed.
func (k *Keypair) changed() (ci, ki os.FileInfo, changed bool) {
	ci, err := os.Stat(k.certFile)
	if err != nil {
		return nil, nil, false // a file being replaced: keep serving the loaded pair
	}
	ki, err = os.Stat(k.keyFile)
	if err != nil {
		return nil, nil, false
	}
	if k.certStat.same(ci) && k.keyStat.same(ki) {
		return ci, ki, false
	}
	if k.failed[0].same(ci) && k.failed[1].same(ki) {
		return ci, ki, false
	}
	return ci, ki, true
}

func (k *Keypair) reload() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.reloadLocked()
}

func (k *Keypair) reloadLocked() error {
	// Stat before reading: a change that lands between the stat and the
	// read is seen again at the next handshake.
	ci, err := os.Stat(k.certFile)
	if err != nil {
		return err
	}
	ki, err := os.Stat(k.keyFile)
	if err != nil {
		return err
	}
	cert, err := tls.LoadX509KeyPair(k.certFile, k.keyFile)
	if err != nil {
		return fmt.Errorf("loading TLS key pair %s, %s: %w", k.certFile, k.keyFile, err)
	}
	k.cert, k.certStat, k.keyStat = &cert, fileStamp{ci}, fileStamp{ki}
	return nil
}
