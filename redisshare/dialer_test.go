package redisshare

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDialerRefusesPlaintextOffLoopback: without TLS, the dialer refuses
// every address that is not loopback, an IP or a name, before dialing
// (the dial below fails the test if reached), and counts and logs each
// refusal with the address only; loopback addresses and Unix sockets are
// dialed, and so is any address with TLS or with plain text allowed.
func TestDialerRefusesPlaintextOffLoopback(t *testing.T) {
	const secret = "s3cr3t-Pa55"
	var logs bytes.Buffer
	refused := 0
	d := newDialer(nil, time.Second, false, slog.New(slog.NewTextHandler(&logs, nil)), func() { refused++ })
	var dialed []string
	errDialed := errors.New("dialed")
	d.dial = func(_ context.Context, _, addr string) (net.Conn, error) {
		dialed = append(dialed, addr)
		return nil, errDialed
	}
	off := []string{"192.0.2.1:6379", "[2001:db8::1]:6379", "redis.example:6379", "localhost.evil.example:6379", "0.0.0.0:6379", ":6379", "10.0.0.1:26379"}
	for _, addr := range off {
		_, err := d.DialContext(t.Context(), "tcp", addr)
		var perr *plaintextError
		require.ErrorAs(t, err, &perr, addr)
		assert.Contains(t, err.Error(), addr)
		assert.False(t, away(err), "a refusal is a misconfiguration, not an outage")
	}
	assert.Empty(t, dialed, "no address off loopback was dialed")
	assert.Equal(t, len(off), refused, "each refusal counted")
	assert.Equal(t, 3, strings.Count(logs.String(), "refused a Redis connection"), "3 logged at once, the rest throttled")
	assert.Contains(t, logs.String(), "addr=192.0.2.1:6379")
	assert.NotContains(t, logs.String(), secret)

	on := []string{"127.0.0.1:6379", "127.1.2.3:26379", "[::1]:6379", "localhost:6379"}
	for _, addr := range on {
		_, err := d.DialContext(t.Context(), "tcp", addr)
		require.ErrorIs(t, err, errDialed, addr)
	}
	_, err := d.DialContext(t.Context(), "unix", "/run/redis.sock")
	require.ErrorIs(t, err, errDialed)
	assert.Equal(t, append(on, "/run/redis.sock"), dialed)

	for name, d := range map[string]*dialer{
		"TLS":                newDialer(&tls.Config{MinVersion: tls.VersionTLS12}, time.Second, false, slog.New(slog.DiscardHandler), nil),
		"plain text allowed": newDialer(nil, time.Second, true, slog.New(slog.DiscardHandler), nil),
	} {
		dialed = nil
		d.dial = func(_ context.Context, _, addr string) (net.Conn, error) {
			dialed = append(dialed, addr)
			return nil, errDialed
		}
		for _, addr := range off {
			_, err := d.DialContext(t.Context(), "tcp", addr)
			require.ErrorIs(t, err, errDialed, "%s: %s", name, addr)
		}
		assert.Equal(t, off, dialed, name)
	}
}
