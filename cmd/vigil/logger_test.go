package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLoggerEscapesInvisible: the bidirectional controls and zero-width
// characters a client chooses (a tool name, a request id, a session id
// header it sent) reach the log escaped, in either format, never raw:
// \u202e in JSON (the same string once decoded), quoted in text (issue 56
// N10).
func TestLoggerEscapesInvisible(t *testing.T) {
	t.Parallel()
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			log := newLogger(config{logFormat: format, logLevel: slog.LevelInfo}, &buf)
			log.Info("call \u202etxt.exe", "tool", "ech\u202eo", "id", "1\u2066", "error", errors.New("bad \u200f name"))
			log.With("session", "s\u2067").Info("plain", "n", 1)
			out := buf.String()
			for _, c := range []string{"\u202e", "\u2066", "\u2067", "\u200f"} {
				assert.NotContains(t, out, c, "%+q raw in the %s log:\n%s", c, format, out)
			}
			assert.Contains(t, out, `ech\u202eo`)
			if format == "json" {
				lines := strings.Split(strings.TrimSpace(out), "\n")
				require.Len(t, lines, 2)
				var m map[string]any
				require.NoError(t, json.Unmarshal([]byte(lines[0]), &m))
				assert.Equal(t, "ech\u202eo", m["tool"])
				assert.Equal(t, "call \u202etxt.exe", m["msg"])
			}
		})
	}
}

// TestLoggerDurationsInSeconds: a duration reaches the JSON log as a
// number of seconds under a key ending in _seconds, never in nanoseconds
// ("grace":10000000000), and vigil's own shutdown line says grace_seconds.
func TestLoggerDurationsInSeconds(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := newLogger(config{logFormat: "json", logLevel: slog.LevelInfo}, &buf)
	log.Info("d", "grace", 10*time.Second, "wait_seconds", 1500*time.Millisecond, slog.Group("g", "ttl", time.Minute))
	var m map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &m))
	assert.InDelta(t, 10.0, m["grace_seconds"], 0)
	assert.InDelta(t, 1.5, m["wait_seconds"], 0)
	assert.Equal(t, map[string]any{"ttl_seconds": 60.0}, m["g"])
	assert.NotContains(t, m, "grace")
}
