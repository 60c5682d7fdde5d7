package webhook

import (
	"log"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// DefaultHandshakeLogInterval is the most often a failed TLS handshake is
// logged: probes, scanners and clients that hang up make them by the
// thousand, and each line would say the same thing.
const DefaultHandshakeLogInterval = 10 * time.Second

// serverErrorLog receives what net/http's server logs (its ErrorLog) and
// logs it at the level it deserves: panics at Error, failed TLS handshakes
// at Warn at most once per interval with the count of the ones suppressed
// since, everything else (protocol errors, accept errors) at Warn.
type serverErrorLog struct {
	log      *slog.Logger
	metrics  *Metrics
	interval time.Duration
	now      func() time.Time

	mu         sync.Mutex
	last       time.Time
	suppressed int
}

func newServerErrorLog(l *slog.Logger, m *Metrics, interval time.Duration) *log.Logger {
	if interval <= 0 {
		interval = DefaultHandshakeLogInterval
	}
	return log.New(&serverErrorLog{log: l, metrics: m, interval: interval, now: time.Now}, "", 0)
}

// Write implements io.Writer; log.Logger calls it once per message.
func (l *serverErrorLog) Write(p []byte) (int, error) {
	msg := strings.TrimRight(string(p), "\n")
	switch {
	case strings.HasPrefix(msg, "http: TLS handshake error"):
		l.metrics.handshakeFailed()
		if n, ok := l.due(); ok {
			l.log.Warn("TLS handshake failed", "error", msg, "suppressed", n, "window", l.interval.String())
		}
	case strings.HasPrefix(msg, "http: panic serving"), strings.HasPrefix(msg, "http2: panic serving"):
		l.log.Error("panic serving a request", "error", msg)
	default:
		l.log.Warn("HTTP server error", "error", msg)
	}
	return len(p), nil
}

// due tells whether a handshake failure is logged now, and how many were
// suppressed since the last one logged.
func (l *serverErrorLog) due() (suppressed int, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if !l.last.IsZero() && now.Sub(l.last) < l.interval {
		l.suppressed++
		return 0, false
	}
	suppressed, l.suppressed, l.last = l.suppressed, 0, now
	return suppressed, true
}
