package debugpage

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

func TestStatsHistIndex(t *testing.T) {
	assert.Equal(t, 0, histIndex(0))
	assert.Equal(t, 0, histIndex(1023))
	for _, ns := range []int64{1024, 1500, 2047, 3000, 1e6, 3e6, 1e9, 1e11} {
		i := histIndex(ns)
		lo, hi := histBounds(i)
		assert.True(t, float64(ns) >= lo && float64(ns) < hi, "%d in bucket %d [%v, %v)", ns, i, lo, hi)
	}
	assert.Equal(t, statsHistBuckets-1, histIndex(1<<62))
}

func TestStatsOutcomeOf(t *testing.T) {
	for _, c := range []struct {
		out  server.Outcome
		want string
	}{
		{server.Outcome{}, "ok"},
		{server.Outcome{Result: &server.CallToolResult{IsError: true}}, "tool_error"},
		{server.Outcome{Result: server.CallToolResult{IsError: true}}, "tool_error"}, // a value, as the metrics count it
		{server.Outcome{Result: (*server.CallToolResult)(nil)}, "ok"},
		{server.Outcome{Err: errors.New("x")}, "error"},
		{server.Outcome{Err: server.NewError(protocol.CodeInvalidRequest, &mcpconv.PolicyDenied{Policy: "tools.echo"})}, "denied"},
		{server.Outcome{Err: server.ErrHandlerTimeout}, "error:timeout"},
		{server.Outcome{Cause: server.ErrClientCancel, Dropped: protocol.DropCancelled}, "cancelled:client_cancel"},
		{server.Outcome{Cause: server.ErrTransportClose}, "cancelled:transport_close"},
		{server.Outcome{Cause: server.ErrStreamClose}, "cancelled:stream_close"},
		{server.Outcome{Cause: server.ErrShutdown}, "cancelled:shutdown"},
		{server.Outcome{Cause: errors.New("?")}, "cancelled:other"},
		{server.Outcome{Err: server.NewError(protocol.CodeInternal, fmt.Errorf("upstream x is gone: %w", server.ErrUpstreamClosed))}, "error:upstream_closed"},
		{server.Outcome{Dropped: protocol.DropPeerGone}, "dropped:peer_gone"},
		{server.Outcome{Dropped: protocol.DropWriterClosed}, "dropped:writer_closed"},
	} {
		assert.Equal(t, c.want, slotNames[statsOutcomeOf(c.out)])
	}
}

func TestStatsRecord(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	s := newRequestStats(t0.Add(-time.Hour))
	for i := range 100 {
		s.record("tools/call", "echo", true, slotOK, time.Duration(i+1)*time.Millisecond, t0)
	}
	s.record("tools/call", "echo", true, slotToolError, time.Millisecond, t0)
	s.record("tools/call", "sleep", true, cancelSlot(protocol.ReasonClientCancel), time.Second, t0.Add(-2*time.Minute))
	s.record("tools/call", "nope", false, slotError, time.Millisecond, t0)
	s.record("ping", "", true, slotOK, time.Microsecond, t0)
	rows := s.rows(t0)
	require.Len(t, rows, 4)
	byKey := map[string]keyRow{}
	for _, r := range rows {
		byKey[r.Key] = r
	}
	echo := byKey["tools/call echo"]
	assert.Equal(t, uint64(101), echo.Minute.Requests)
	assert.Equal(t, uint64(1), echo.Minute.Errors)
	assert.InDelta(t, 50, echo.Total.P50MS, 10)
	assert.InDelta(t, 99, echo.Total.P99MS, 25)
	sleep := byKey["tools/call sleep"]
	assert.Equal(t, uint64(0), sleep.Minute.Requests, "two minutes ago")
	assert.Equal(t, uint64(1), sleep.Total.Cancelled)
	assert.Equal(t, uint64(1), byKey["other"].Total.Errors)
	series := s.series(t0)
	require.Len(t, series, statsSeconds)
	assert.Equal(t, uint64(103), series[statsSeconds-1].Requests)
	assert.Equal(t, uint64(1), series[statsSeconds-1-120].Requests)
	assert.Greater(t, statsBoundBytes(), s.statsInUseBytes())
	t.Logf("stats bound: %d bytes, in use: %d", statsBoundBytes(), s.statsInUseBytes())
}

func TestStatsKeyCap(t *testing.T) {
	s := newRequestStats(time.Now())
	for i := range statsMaxKeys + 10 {
		s.record("m"+string(rune('a'+i%26))+string(rune('a'+i/26)), "", true, slotOK, time.Millisecond, time.Now())
	}
	rows := s.rows(time.Now())
	require.Len(t, rows, statsMaxKeys+1)
	var other *keyRow
	for i := range rows {
		if rows[i].Key == "other" {
			other = &rows[i]
		}
	}
	require.NotNil(t, other, "the keys beyond the cap are counted under other")
	assert.Equal(t, uint64(10), other.Total.Requests)
}

func BenchmarkStatsRecord(b *testing.B) {
	s := newRequestStats(time.Now())
	now := time.Now()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			s.record("tools/call", "echo", true, slotOK, 150*time.Microsecond, now)
		}
	})
	if allocs := testing.AllocsPerRun(100, func() { s.record("tools/call", "echo", true, slotOK, time.Millisecond, now) }); allocs != 0 {
		b.Fatalf("record allocates %v times", allocs)
	}
}

// Recording from many goroutines while the page reads loses no count of
// the totals (the race detector watches the rest).
func TestStatsConcurrent(t *testing.T) {
	s := newRequestStats(time.Now())
	const workers, each = 8, 2000
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 50 {
			_ = s.rows(time.Now())
			_ = s.series(time.Now())
		}
	}()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				s.record("tools/call", fmt.Sprint("t", w%3), true, statSlot(i)%slotCount, time.Duration(i)*time.Microsecond, time.Now())
			}
		})
	}
	wg.Wait()
	<-done
	var total uint64
	for _, r := range s.rows(time.Now()) {
		total += r.Total.Requests
	}
	assert.Equal(t, uint64(workers*each), total)
}
