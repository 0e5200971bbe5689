package streamable

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/vigil-mcp/vigil/transport"
)

// multicast is an Endpoint's transport.Multicast: a notification for every
// session is encoded once, as an SSE event, into a bounded log, and one
// closed channel (the bell) wakes every standalone GET stream, which writes
// the events it has not written yet if its session joined. Sending costs
// the same for ten sessions or ten thousand, and a stream reads the log
// without a lock.
type multicast struct {
	mu     sync.Mutex // serializes send
	last   atomic.Uint64
	bell   atomic.Pointer[chan struct{}] // closed by the next send
	events [multicastBacklog]atomic.Pointer[castEvent]
	joined atomic.Int64 // sessions that joined and have not ended
}

// castEvent is one multicast notification: its sequence number, and the
// whole SSE event.
type castEvent struct {
	seq  uint64
	data []byte
}

// multicastBacklog is how many notifications the log holds: a stream that
// falls further behind (its client reads too slowly) is cut, counted as
// CutBacklog, as a GET stream whose queue overflows is.
const multicastBacklog = 256

var _ transport.Multicast = (*multicast)(nil)

func newMulticast() *multicast {
	c := new(multicast)
	bell := make(chan struct{})
	c.bell.Store(&bell)
	return c
}

// Send logs n as an SSE event and rings the bell.
func (c *multicast) Send(_ context.Context, n *transport.Request) int {
	data, err := appendEventMessage(appendEventHead(nil, ""), n)
	if err != nil {
		return 0 // never for what a server sends: a frozen request encodes
	}
	data = append(data, eventTail...)
	next := make(chan struct{})
	c.mu.Lock()
	seq := c.last.Load() + 1
	c.events[seq%multicastBacklog].Store(&castEvent{seq: seq, data: data})
	c.last.Store(seq) // after the event: a stream that sees seq finds it
	rung := c.bell.Swap(&next)
	c.mu.Unlock()
	close(*rung)
	return int(c.joined.Load())
}

// listen returns the bell the next send rings, then the sequence number of
// the last event sent: a stream that has written up to it and waits on the
// bell misses none.
func (c *multicast) listen() (<-chan struct{}, uint64) {
	bell := *c.bell.Load()
	return bell, c.last.Load()
}

// event returns the event numbered seq (at most last), or false when the
// log no longer holds it.
func (c *multicast) event(seq uint64) ([]byte, bool) {
	ev := c.events[seq%multicastBacklog].Load()
	if ev == nil || ev.seq != seq {
		return nil, false
	}
	return ev.data, true
}

// writeCast writes the multicast events after seen to the stream, if its
// session joined (else it only moves past them), and returns the bell of
// the next send and the last event's number. A stream the log moved past
// is cut (errBacklog).
func (st *stream) writeCast(c *multicast, seen uint64, joined bool) (<-chan struct{}, uint64, error) {
	bell, last := c.listen()
	if !joined || last == seen {
		return bell, last, nil
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.shut {
		return bell, last, transport.ErrStreamGone
	}
	st.armLocked()
	for seq := seen + 1; seq <= last; seq++ {
		data, ok := c.event(seq)
		if !ok {
			st.cutLocked(CutBacklog)
			return bell, last, errBacklog
		}
		if _, err := st.w.Write(data); err != nil {
			return bell, last, st.failedLocked(err)
		}
	}
	return bell, last, st.failedLocked(st.flush())
}
