package restpages_test

import (
	"bytes"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/vigil-mcp/vigil/cmd/internal/restpages"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// syncBuffer is a buffer the tuner's goroutine writes and the test reads;
// released is closed at the first line about the executable's pages.
type syncBuffer struct {
	mu       sync.Mutex
	buf      bytes.Buffer
	released chan struct{}
	once     sync.Once
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if bytes.Contains(p, []byte("executable pages")) {
		b.once.Do(func() { close(b.released) })
	}
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestStartLogsReleases: with a release every interval, the tuner gives
// back the executable's pages read from the pagemap it was given, and
// logs each release with its bytes.
func TestStartLogsReleases(t *testing.T) {
	pagemap, err := os.Open("/proc/self/pagemap")
	if err != nil {
		t.Skip("no pagemap: ", err)
	}
	defer func() { _ = pagemap.Close() }()
	logs := &syncBuffer{released: make(chan struct{})}
	tuner := restpages.Start(64, 1, pagemap, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	select {
	case <-logs.released:
	case <-time.After(20 * time.Second):
	}
	tuner.Stop()
	require.Contains(t, logs.String(), "executable pages released", logs.String())
	assert.Contains(t, logs.String(), "released_bytes=")
}
