package webhook

import (
	"bytes"
	"crypto/tls"
	"encoding/binary"
	"io"
	"strings"
	"testing"
	"time"
)

// TestHTTP2StreamsCoverTheInFlightBound reads the server's HTTP/2
// SETTINGS: one connection may carry as many streams as the server
// evaluates reviews at once (Options.MaxInFlight), and never fewer than
// minHTTP2Streams (more than kube-apiserver's default concurrency), so
// that a caller with more outstanding than the server evaluates gets 429s
// on its one connection rather than dialing more.
func TestHTTP2StreamsCoverTheInFlightBound(t *testing.T) {
	for _, tc := range []struct{ maxInFlight, want int }{
		{DefaultMaxInFlight, minHTTP2Streams},
		{1000, 1000},
		{2500, 2500},
		{100, minHTTP2Streams},
		{0, minHTTP2Streams},
	} {
		f := newTLS(t)
		s := passThroughServer(t, f, func(o *Options) { o.MaxInFlight = tc.maxInFlight })
		r := start(t, s)
		if got := maxConcurrentStreams(t, f, strings.TrimPrefix(r.url, "https://")); got != tc.want {
			t.Errorf("MaxInFlight %d: SETTINGS_MAX_CONCURRENT_STREAMS %d, want %d", tc.maxInFlight, got, tc.want)
		}
	}
}

// maxConcurrentStreams is the SETTINGS_MAX_CONCURRENT_STREAMS of the
// first SETTINGS frame the server at addr sends (RFC 9113 §6.5); -1 when
// it sends none.
func maxConcurrentStreams(t *testing.T, f *tlsFixture, addr string) int {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: f.roots, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if p := conn.ConnectionState().NegotiatedProtocol; p != "h2" {
		t.Fatalf("ALPN %q, want h2", p)
	}
	_ = conn.SetDeadline(time.Now().Add(time.Minute))
	// The client preface and an empty SETTINGS frame.
	preface := append([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), 0, 0, 0, 4, 0, 0, 0, 0, 0)
	if _, err := conn.Write(preface); err != nil {
		t.Fatal(err)
	}
	for {
		var h [9]byte
		if _, err := io.ReadFull(conn, h[:]); err != nil {
			t.Fatal(err)
		}
		length := int(h[0])<<16 | int(h[1])<<8 | int(h[2])
		payload := make([]byte, length)
		if _, err := io.ReadFull(conn, payload); err != nil {
			t.Fatal(err)
		}
		const typeSettings, flagAck = 4, 1
		if h[3] != typeSettings || h[4]&flagAck != 0 {
			continue
		}
		const settingsMaxConcurrentStreams = 3
		for p := bytes.NewReader(payload); p.Len() >= 6; {
			var id uint16
			var v uint32
			_ = binary.Read(p, binary.BigEndian, &id)
			_ = binary.Read(p, binary.BigEndian, &v)
			if id == settingsMaxConcurrentStreams {
				return int(v)
			}
		}
		return -1
	}
}
