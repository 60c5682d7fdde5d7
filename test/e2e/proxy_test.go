//go:build linux

package e2e

import (
	"io"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"k8s.io/client-go/rest"
)

// faultProxy forwards TCP connections to kube-apiserver (TLS passes
// through: its serving certificate names 127.0.0.1) and injects the faults
// a network and a load balancer cause: Cut closes every open connection
// (each watch ends with an error and is re-established), Block makes it
// close new connections at once (kube-apiserver unreachable) until
// Unblock.
type faultProxy struct {
	// Kubeconfig reaches kube-apiserver through the proxy.
	Kubeconfig string

	l       net.Listener
	backend string

	mu      sync.Mutex
	conns   map[net.Conn]bool
	blocked bool
	cuts    int // connections closed by Cut
	refused int // connections closed because blocked
}

// Proxy starts a faultProxy in front of c's kube-apiserver; it stops when t
// ends.
func (c *Cluster) Proxy(t *testing.T) *faultProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{l: l, backend: "127.0.0.1:" + strconv.Itoa(c.port), conns: map[net.Conn]bool{}}
	cfg := rest.CopyConfig(c.Config)
	cfg.Host = "https://" + l.Addr().String()
	p.Kubeconfig = filepath.Join(c.Dir, "kubeconfig-proxy")
	if err := writeKubeconfig(p.Kubeconfig, cfg); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.accept()
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
		p.Cut()
	})
	return p
}

func (p *faultProxy) accept() {
	for {
		in, err := p.l.Accept()
		if err != nil {
			return // closed
		}
		refuse := func() bool {
			if p.blocked {
				p.refused++
			}
			return p.blocked
		}
		if p.track(in, refuse) {
			go p.forward(in)
		}
	}
}

// track adds c to the open connections and returns true, unless refuse
// (called under the lock) says no: then it closes c.
func (p *faultProxy) track(c net.Conn, refuse func() bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if refuse() {
		c.Close()
		return false
	}
	p.conns[c] = true
	return true
}

// forward copies both ways until either side closes.
func (p *faultProxy) forward(in net.Conn) {
	defer p.forget(in)
	out, err := net.Dial("tcp", p.backend)
	if err != nil {
		return // kube-apiserver is down: the client sees the connection close
	}
	if !p.track(out, func() bool { return !p.conns[in] }) { // cut meanwhile
		return
	}
	defer p.forget(out)
	var wg sync.WaitGroup
	wg.Add(2)
	pipe := func(dst, src net.Conn) {
		defer wg.Done()
		_, _ = io.Copy(dst, src)
		dst.Close()
		src.Close()
	}
	go pipe(out, in)
	go pipe(in, out)
	wg.Wait()
}

func (p *faultProxy) forget(c net.Conn) {
	c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// Cut closes every open connection (both sides of each forwarded one) and
// returns how many it closed.
func (p *faultProxy) Cut() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
		n++
	}
	p.cuts += n
	return n
}

// Block cuts every connection and refuses new ones until Unblock.
func (p *faultProxy) Block() {
	p.mu.Lock()
	p.blocked = true
	p.mu.Unlock()
	p.Cut()
}

// Unblock lets connections through again.
func (p *faultProxy) Unblock() {
	p.mu.Lock()
	p.blocked = false
	p.mu.Unlock()
}

// Refused returns how many connections were refused while blocked.
func (p *faultProxy) Refused() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refused
}
