// Command stall attacks a mutatis webhook the way the review of its
// defaults did (docs/reliability.md): --conns requests announce
// --content-length bytes, send --send of them and stall for --hold, over
// HTTP/1.1 connections (one each) or HTTP/2 streams (--http2). Meanwhile
// it posts a valid review every --every and prints the answer's code and
// latency; at the end, the codes the stalled requests got. With --idle it
// opens that many TLS connections that send nothing instead.
//
//	go run ./test/load/cmd/stall --url https://127.0.0.1:8443/mutate --ca DIR/ca.crt \
//	    [--conns 400] [--content-length 11] [--send 10] [--http2] [--hold 10s]
//
// Loopback only: it refuses a host other than 127.0.0.1 or localhost.
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

const review = `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u1","kind":{"group":"","version":"v1","kind":"ConfigMap"},"resource":{"group":"","version":"v1","resource":"configmaps"},"namespace":"default","operation":"CREATE","userInfo":{"username":"alice"},"object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"default"}}}}`

func main() {
	target := flag.String("url", "https://127.0.0.1:8443/mutate", "the webhook's review URL (loopback only)")
	caFile := flag.String("ca", "", "the CA of the serving certificate")
	conns := flag.Int("conns", 400, "stalled requests")
	contentLength := flag.Int64("content-length", 11, "the Content-Length they announce")
	send := flag.Int64("send", 10, "the bytes of the body they send before stalling")
	h2 := flag.Bool("http2", false, "stall HTTP/2 streams instead of HTTP/1.1 connections")
	idle := flag.Int("idle", 0, "open this many idle TLS connections instead")
	hold := flag.Duration("hold", 10*time.Second, "how long the attack lasts")
	every := flag.Duration("every", time.Second, "how often a valid review is sent")
	flag.Parse()

	u, err := url.Parse(*target)
	if err != nil || (u.Hostname() != "127.0.0.1" && u.Hostname() != "localhost") {
		fmt.Fprintln(os.Stderr, "stall: --url must be on 127.0.0.1 or localhost")
		os.Exit(2)
	}
	pem, err := os.ReadFile(*caFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "stall:", err)
		os.Exit(2)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	tlsConfig := &tls.Config{RootCAs: roots}
	// Each transport gets its own tls.Config: an HTTP/2 transport adds "h2"
	// to the NextProtos of the one it is given.
	transport := &http.Transport{TLSClientConfig: tlsConfig.Clone(), MaxIdleConnsPerHost: 10000, ForceAttemptHTTP2: *h2}
	if !*h2 {
		transport.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	attacker := &http.Client{Transport: transport}
	ctx, cancel := context.WithTimeout(context.Background(), *hold)
	defer cancel()

	var mu sync.Mutex
	codes := map[string]int{}
	var wg sync.WaitGroup
	began := time.Now()
	if *idle > 0 {
		for range *idle {
			c, err := tls.Dial("tcp", u.Host, tlsConfig.Clone())
			if err != nil {
				codes["dial: "+err.Error()]++
				continue
			}
			defer c.Close()
		}
	}
	n := *conns
	if *idle > 0 {
		n = 0
	}
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pr, pw := io.Pipe()
			go func() {
				_, _ = pw.Write(bytes.Repeat([]byte(" "), int(*send)))
				<-ctx.Done()
				pw.CloseWithError(ctx.Err())
			}()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, *target, pr)
			req.ContentLength = *contentLength
			req.Header.Set("Content-Type", "application/json")
			code := "error"
			resp, err := attacker.Do(req)
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				code = fmt.Sprintf("%d after %v", resp.StatusCode, time.Since(began).Round(time.Second))
			} else if ne, ok := err.(net.Error); ok && ne.Timeout() || ctx.Err() != nil {
				code = "unanswered when the attack stopped"
			}
			mu.Lock()
			codes[code]++
			mu.Unlock()
		}()
	}
	fmt.Printf("attack: %d stalled requests (Content-Length %d, %d bytes sent, HTTP/2 %v), %d idle connections\n", n, *contentLength, *send, *h2, *idle)

	probe := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig.Clone(), ForceAttemptHTTP2: true}, Timeout: 5 * time.Second}
	tick := time.NewTicker(*every)
	defer tick.Stop()
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-tick.C:
			t0 := time.Now()
			resp, err := probe.Post(*target+"?timeout=10s", "application/json", strings.NewReader(review))
			if err != nil {
				fmt.Printf("%5.1fs valid review: %v\n", time.Since(began).Seconds(), err)
				continue
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			fmt.Printf("%5.1fs valid review: HTTP %d in %v %s\n", time.Since(began).Seconds(), resp.StatusCode, time.Since(t0).Round(100*time.Microsecond), firstBytes(body))
		}
	}
	wg.Wait()
	keys := make([]string, 0, len(codes))
	for k := range codes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Printf("stalled requests: %d × %s\n", codes[k], k)
	}
}

func firstBytes(b []byte) string {
	if len(b) > 80 {
		b = b[:80]
	}
	return string(b)
}
