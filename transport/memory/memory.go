package memory

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/vigil-mcp/vigil/transport"
)

// Conn is one end of a pair made by [NewPair]. It is safe for one reader and
// any number of concurrent writers.
type Conn struct {
	in   <-chan []byte
	out  chan<- []byte
	self *end
	peer *end
}

type end struct {
	done chan struct{}
	once sync.Once
}

func (e *end) close() { e.once.Do(func() { close(e.done) }) }

func (e *end) isClosed() bool {
	select {
	case <-e.done:
		return true
	default:
		return false
	}
}

var _ transport.Conn = (*Conn)(nil)

// NewPair returns the two connected ends of an in-memory pipe. What one end
// writes the other reads, in order.
func NewPair() (*Conn, *Conn) {
	ab, ba := make(chan []byte), make(chan []byte)
	a, b := &end{done: make(chan struct{})}, &end{done: make(chan struct{})}
	return &Conn{in: ba, out: ab, self: a, peer: b}, &Conn{in: ab, out: ba, self: b, peer: a}
}

// Read returns the next message the peer wrote. It fails with
// [transport.ErrClosed] once this end is closed and with
// [transport.ErrPeerGone] once the peer's end is. A malformed frame (see
// [Conn.WriteFrame]) yields a [*transport.DecodeError].
func (c *Conn) Read(ctx context.Context) (transport.Message, error) {
	if c.self.isClosed() {
		return nil, fmt.Errorf("memory: read: %w", transport.ErrClosed)
	}
	select {
	case frame := <-c.in:
		return transport.DecodeMessage(frame)
	case <-c.self.done:
		return nil, fmt.Errorf("memory: read: %w", transport.ErrClosed)
	case <-c.peer.done:
		return nil, fmt.Errorf("memory: read: %w: %w", transport.ErrPeerGone, io.EOF)
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// Write encodes msg and blocks until the peer reads it, either end closes, or
// ctx ends.
func (c *Conn) Write(ctx context.Context, msg transport.Message) error {
	frame, err := transport.AppendMessage(nil, msg)
	if err != nil {
		return err
	}
	return c.WriteFrame(ctx, frame)
}

// WriteFrame sends raw bytes as one frame, valid JSON-RPC or not: tests use it
// to send malformed input. The frame must not be modified afterwards.
func (c *Conn) WriteFrame(ctx context.Context, frame []byte) error {
	if c.self.isClosed() {
		return fmt.Errorf("memory: write: %w", transport.ErrClosed)
	}
	if c.peer.isClosed() {
		return fmt.Errorf("memory: write: %w: %w", transport.ErrPeerGone, io.ErrClosedPipe)
	}
	select {
	case c.out <- frame:
		return nil
	case <-c.self.done:
		return fmt.Errorf("memory: write: %w", transport.ErrClosed)
	case <-c.peer.done:
		return fmt.Errorf("memory: write: %w: %w", transport.ErrPeerGone, io.ErrClosedPipe)
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// Close closes this end; the peer's pending and later calls fail with
// [transport.ErrPeerGone]. It is idempotent and always returns nil.
func (c *Conn) Close() error {
	c.self.close()
	return nil
}
