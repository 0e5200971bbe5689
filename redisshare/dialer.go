package redisshare

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vigil-mcp/vigil/internal/logthrottle"
	"github.com/vigil-mcp/vigil/internal/loopback"
)

// dialer opens every connection of the shared mode's clients: to the
// Sentinels, the primary and the replicas they name, the Cluster's nodes,
// whether the URL names them or Redis does (SENTINEL GET-MASTER-ADDR-BY-NAME,
// a discovered Sentinel, CLUSTER SLOTS, a MOVED redirection). Without TLS
// it refuses, before any packet leaves, an address that is not loopback
// (an IP of 127.0.0.0/8 or ::1, or "localhost"), unless plain text is
// allowed: the first thing a connection sends is HELLO with the password.
// A Unix socket is local. Each refusal is counted and logged (a burst,
// then one a period), with the address only.
type dialer struct {
	dial      func(ctx context.Context, network, addr string) (net.Conn, error) // go-redis's own, with TLS when configured
	plaintext bool                                                              // no TLS, and plain text allowed only on loopback
	logger    *slog.Logger
	throttle  *logthrottle.Throttle
	refused   func() // counts a refusal; nil: none
}

// Refusals (and the lease loop's warnings of subscriptions not yet on Redis)
// are logged 3 at once, then one every refusalLogPeriod: a
// client redials every renewal (4 a second) and its pool once a second.
const refusalLogPeriod = 10 * time.Second

// newDialer returns the dialer of connections with conf (nil: no TLS),
// each attempt bounded by timeout; allowPlaintext lifts the loopback rule.
func newDialer(conf *tls.Config, timeout time.Duration, allowPlaintext bool, logger *slog.Logger, refused func()) *dialer {
	return &dialer{
		dial:      redis.NewDialer(&redis.Options{DialTimeout: timeout, TLSConfig: conf}),
		plaintext: conf == nil && !allowPlaintext,
		logger:    logger, throttle: logthrottle.New(refusalLogPeriod, 3), refused: refused,
	}
}

// DialContext is the clients' Dialer (redis.Options.Dialer,
// FailoverOptions.Dialer, ClusterOptions.Dialer).
func (d *dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if d.plaintext && network != "unix" && !loopback.ListenAddr(addr) {
		if d.refused != nil {
			d.refused()
		}
		if ok, skipped := d.throttle.Allow(); ok {
			d.logger.Error("refused a Redis connection without TLS to an address not on loopback, which Redis named: its password would cross the network in clear; use rediss:// or -redis-insecure-plaintext",
				"addr", addr, "refusals_not_logged", skipped)
		}
		return nil, &plaintextError{addr: addr}
	}
	return d.dial(ctx, network, addr)
}

// plaintextError is the dialer's refusal of a connection without TLS to
// an address not on loopback: a misconfiguration, not an outage.
type plaintextError struct{ addr string }

func (e *plaintextError) Error() string {
	return fmt.Sprintf("refused to connect to %s without TLS: it is not on loopback, and the password would cross the network in clear (use rediss://, or pass -redis-insecure-plaintext)", e.addr)
}
