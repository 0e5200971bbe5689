package streamable

import (
	"fmt"
	"net/http"
	"sync"

	"github.com/vigil-mcp/vigil/transport"
)

// outbox queues the messages of a standalone GET stream for the stream's
// own goroutine (the GET's HTTP handler, see serveGet) to write. A write to
// the stream then never waits for its client, and a notification to every
// session costs one queued pointer per session: no goroutine, no timer and,
// once the queue has room, no allocation.
//
// The queue is bounded (maxOutboxMessages and maxOutboxBytes): a client
// that does not take its events as fast as they come has its stream cut
// (counted as CutBacklog), rather than holding an unbounded backlog.
type outbox struct {
	mu     sync.Mutex
	queue  []transport.Message
	spare  []transport.Message // the writer's last batch, reused as the next queue
	bytes  int                 // the queue's encoded size
	over   bool                // the bound was exceeded: the writer cuts the stream
	closed bool                // the writer left: nothing more is taken
	wake   chan struct{}       // holds one token while the queue has work

	// The queue's bytes, and the batch's being written, counted against
	// caller by quotas until written or dropped (quota.go); nil: not
	// counted.
	quotas          *quotaState
	caller          string
	queued, writing bodyHold
}

// The bounds of an outbox's queue. A single message larger than
// maxOutboxBytes is taken when the queue is empty.
const (
	maxOutboxMessages = 1024
	maxOutboxBytes    = 4 << 20
)

// standalone is a standalone GET stream and its queue, allocated together:
// one object that lives as long as the stream, apart from the size class
// of the POST streams, which are garbage a request later.
type standalone struct {
	stream
	queue outbox
}

// newStandalone returns a standalone GET stream writing to w, with its
// queue.
func newStandalone(w http.ResponseWriter, sessHdr []string, limit *writeLimit) *stream {
	sa := new(standalone)
	sa.init(w, ResponseSSE, nil, sessHdr)
	sa.limit = limit
	sa.queue.wake = make(chan struct{}, 1)
	sa.out = &sa.queue
	return &sa.stream
}

// post queues m and wakes the writer. It fails with ErrStreamGone once the
// writer left; past the bound it marks the outbox over (the writer cuts
// the stream) and fails too.
func (o *outbox) post(m transport.Message) error {
	size := transport.EncodedSize(m)
	o.mu.Lock()
	switch {
	case o.closed || o.over:
		o.mu.Unlock()
		return errStreamClosed
	case len(o.queue) >= maxOutboxMessages || (len(o.queue) > 0 && o.bytes+size > maxOutboxBytes):
		o.over = true
		o.mu.Unlock()
		o.signal()
		return errBacklog
	}
	o.queue = append(o.queue, m)
	o.bytes += size
	if o.quotas != nil {
		o.quotas.grow(&o.queued, o.caller, size)
	}
	o.mu.Unlock()
	o.signal()
	return nil
}

// signal wakes the writer, unless a wake is pending already.
func (o *outbox) signal() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// take hands the writer the queued messages, and whether the bound was
// exceeded. The writer gives the batch back with done.
func (o *outbox) take() (batch []transport.Message, over bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	batch, o.queue, o.spare = o.queue, o.spare[:0], nil
	o.bytes = 0
	o.writing, o.queued = o.queued, bodyHold{}
	return batch, o.over
}

// done gives back a written batch, emptied, as the next queue's storage.
func (o *outbox) done(batch []transport.Message) {
	clear(batch) // hold no message past its write
	o.mu.Lock()
	o.writing.release()
	if o.spare == nil && cap(batch) <= maxOutboxMessages {
		o.spare = batch[:0]
	}
	o.mu.Unlock()
}

// close refuses every later post; what is queued is dropped.
func (o *outbox) close() {
	o.mu.Lock()
	o.closed = true
	o.queued.release()
	clear(o.queue)
	o.queue, o.spare = nil, nil
	o.mu.Unlock()
}

var (
	errStreamClosed = fmt.Errorf("streamable: write: the standalone stream ended: %w", transport.ErrStreamGone)
	errBacklog      = fmt.Errorf("streamable: write: the standalone stream's client is not taking its events: %w", transport.ErrStreamGone)
)
