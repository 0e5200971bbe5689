package debugpage

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Spans that end while the ring is locked do not wait for it: they are
// left on the intake, and stored, in full, when the holder unlocks.
func TestSpanRingIntakeWhileLocked(t *testing.T) {
	const n = 20
	ring := newSpanRingLimits(ringLimits{Recent: n, MaxBytes: ringMaxBytes})
	tr := ringProvider(t, ring)

	ring.mu.Lock() // a holder, such as the debug page reading the ring
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, span := tr.Start(context.Background(), fmt.Sprintf("t%d", i))
			span.End() // must not block on the held lock
		})
	}
	wg.Wait()
	assert.Empty(t, ring.traces, "stored while the lock was held")
	require.NotNil(t, ring.intake.Load(), "nothing left on the intake")
	ring.unlock()

	assert.Nil(t, ring.intake.Load(), "the intake is not empty after unlock")
	views := recentViews(t, ring)
	want := make([]string, n)
	for i := range n {
		want[i] = fmt.Sprintf("t%d", i)
	}
	assert.ElementsMatch(t, want, rootNames(views))
	checkRing(t, ring)
}

// Spans ending on many goroutines at once, while the page reads the ring,
// are all stored: none is left on the intake.
func TestSpanRingIntakeUnderContention(t *testing.T) {
	const goroutines, perGoroutine = 8, 200
	ring := newSpanRingLimits(ringLimits{Recent: goroutines * perGoroutine, MaxBytes: ringMaxBytes})
	tr := ringProvider(t, ring)

	start := make(chan struct{})
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			<-start
			for i := range perGoroutine {
				_, span := tr.Start(context.Background(), fmt.Sprintf("g%d-%d", g, i))
				span.End()
			}
		})
	}
	readers := make(chan struct{})
	var rwg sync.WaitGroup
	rwg.Go(func() {
		<-start
		for {
			select {
			case <-readers:
				return
			default:
				_ = ring.list(traceFilter{Limit: 10})
			}
		}
	})
	close(start)
	wg.Wait()
	close(readers)
	rwg.Wait()

	assert.Len(t, ring.list(traceFilter{Class: classRecent}), goroutines*perGoroutine, "traces stored")
	assert.Nil(t, ring.intake.Load(), "spans left on the intake after a reader")
	checkRing(t, ring)
}

// Spans are stored a batch at a time: fewer than a batch wait on the
// intake, where every reader sees them; the span that completes a batch
// stores it, with no reader.
func TestSpanRingStoresInBatches(t *testing.T) {
	ring := newSpanRingLimits(ringLimits{Recent: 2 * ringIntakeBatch, MaxBytes: ringMaxBytes})
	tr := ringProvider(t, ring)
	end := func(name string) {
		_, span := tr.Start(context.Background(), name)
		span.End()
	}

	for i := range ringIntakeBatch - 1 {
		end(fmt.Sprintf("a%d", i))
	}
	assert.Empty(t, ring.traces, "stored before a batch was full")
	assert.Len(t, ring.list(traceFilter{Class: classRecent}), ringIntakeBatch-1, "a reader sees the spans on the intake")
	assert.Len(t, ring.traces, ringIntakeBatch-1, "the reader stored them")
	assert.Nil(t, ring.intake.Load())

	for i := range ringIntakeBatch {
		end(fmt.Sprintf("b%d", i))
		if i < ringIntakeBatch-1 {
			assert.Len(t, ring.traces, ringIntakeBatch-1, "stored before a batch was full")
		}
	}
	assert.Nil(t, ring.intake.Load(), "a full batch is stored by the span that fills it")
	assert.Len(t, ring.traces, 2*ringIntakeBatch-1)
	checkRing(t, ring)
}
