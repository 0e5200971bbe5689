package redislog

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestRedisLibraryLogIsThrottled: go-redis's own lines reach vigil's
// logger 5 at once, then one every 10 s telling how many were left out,
// never with a password (go-redis wrote 177 unthrottled lines in 40 s
// with its Sentinels away).
func TestRedisLibraryLogIsThrottled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out bytes.Buffer
		l := New(slog.New(slog.NewTextHandler(&out, nil)), "s3cr3t", "")
		for i := range 40 * 4 { // a line every 250 ms for 40 s, as a renewal's dial failure
			l.Printf(t.Context(), "redis: connection pool: failed to dial %d: AUTH default %s", i, "s3cr3t")
			time.Sleep(250 * time.Millisecond)
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		assert.Len(t, lines, burst+40/10-1, "%s", out.String())
		assert.NotContains(t, out.String(), "s3cr3t")
		assert.Contains(t, lines[0], "source=go-redis")
		assert.Contains(t, lines[len(lines)-1], "lines_not_logged=39")
	})
}
