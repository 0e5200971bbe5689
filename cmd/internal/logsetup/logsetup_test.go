package logsetup_test

import (
	"bytes"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"

	"github.com/vigil-mcp/vigil/cmd/internal/logsetup"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestNew: the JSON logger writes a duration as seconds under a _seconds
// key, and escapes a bidirectional control; the text logger quotes it.
func TestNew(t *testing.T) {
	var buf bytes.Buffer
	logsetup.New("json", slog.LevelInfo, &buf).Info("m", "grace", 1500*time.Millisecond, "name", "a\u202eb")
	assert.Contains(t, buf.String(), `"grace_seconds":1.5`)
	assert.NotContains(t, buf.String(), "\u202e")
	buf.Reset()
	logsetup.New("text", slog.LevelInfo, &buf).Info("m", "name", "a\u202eb")
	assert.Contains(t, buf.String(), `\u202e`)
	buf.Reset()
	logsetup.New("text", slog.LevelWarn, &buf).Info("below the level")
	assert.Empty(t, buf.String())
}
