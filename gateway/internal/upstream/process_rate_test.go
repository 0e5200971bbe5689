package upstream_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/gateway/internal/upstream"
)

// TestStderrRateBounded: a process that floods its stderr has its lines
// logged up to the burst of its bucket, the rest dropped and counted,
// and one record says how many were dropped.
func TestStderrRateBounded(t *testing.T) {
	watchdog(t, time.Minute)
	var l logs
	// A bucket that refills once in 1,000 s: the burst is all it logs.
	p := startFake(t, &l, "flood", upstream.ProcessConfig{StderrLinesPerSecond: 0.001, StderrBurst: 10})
	<-p.Exited()
	require.NoError(t, p.Close()) // waits for stderr to be read to its end
	lines := l.stderrLines(t)
	require.Len(t, lines, 10)
	assert.Equal(t, "line 0", lines[0])
	assert.Equal(t, "line 9", lines[9])
	assert.Equal(t, int64(990), p.DroppedStderrLines())
	var said []float64
	for _, r := range l.records(t) {
		if r["msg"] == "upstream stderr lines dropped" {
			said = append(said, r["dropped"].(float64))
		}
	}
	assert.Equal(t, []float64{990}, said, "one record says how many")
}
