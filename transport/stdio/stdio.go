package stdio

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vigil-mcp/vigil/internal/jsonscan"
	"github.com/vigil-mcp/vigil/transport"
)

// DefaultMaxFrameSize is the largest frame a [Conn] reads unless configured
// otherwise: 4 MiB.
const DefaultMaxFrameSize = 4 << 20

// defaultMaxQueued is how many bytes of messages waiting for their turn to
// be written stop Read unless configured otherwise (WithMaxQueuedBytes).
const defaultMaxQueued = 8 << 20

// waiterBytes is what a message waiting for its turn counts for besides
// its own bytes: what its writer holds meanwhile (a goroutine's starting
// stack; a server's request state), so that many small answers are held
// back as surely as a few large ones.
const waiterBytes = 8 << 10

// Option configures a [Conn]; a nil Option is ignored.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	maxFrame  int
	maxQueued int
	oversize  OversizeFunc
}

// WithMaxFrameSize sets the largest frame, in bytes and without its newline,
// that Read accepts. Values below 1 keep the default.
func WithMaxFrameSize(n int) Option {
	return optionFunc(func(c *config) {
		if n > 0 {
			c.maxFrame = n
		}
	})
}

// OversizeFunc makes a frame over the size bound into what Read returns
// (see [WithOversizeFrames]): head is its first bytes, tail its last ones,
// size its length without its newline.
type OversizeFunc func(head, tail []byte, size int64) (transport.Message, error)

// The bytes of a frame over the bound that Read keeps for [OversizeFunc].
const (
	oversizeHead = 64 << 10
	oversizeTail = 256
)

// WithOversizeFrames makes a frame over the size bound a matter of that
// frame rather than the end of the Conn: Read reads it to its end without
// holding it, keeping its first bytes (at most 64 KiB) and its last 256,
// and returns what f makes of them. A message f returns is returned; an
// error too, which ends the Conn unless it is a [*transport.DecodeError];
// neither skips the frame. Without it (or with a nil f) such a frame ends
// the Conn with [transport.ErrFrameTooLarge].
func WithOversizeFrames(f OversizeFunc) Option {
	return optionFunc(func(c *config) { c.oversize = f })
}

// WithMaxQueuedBytes sets how many bytes of messages waiting for their turn
// to be written (encoded, without the one being written, each counting 8
// KiB more for what its writer holds meanwhile) make Read wait before it
// reads the next frame, until they are written or one of them gives up
// (see [Conn.Read]). Values below 1 keep the default, 8 MiB: 15 answers of
// 512 KiB, or 1,024 small ones.
func WithMaxQueuedBytes(n int) Option {
	return optionFunc(func(c *config) {
		if n > 0 {
			c.maxQueued = n
		}
	})
}

// Conn is a [transport.Conn] over a byte stream pair. It is safe for one
// reader and any number of concurrent writers.
type Conn struct {
	r         *bufio.Reader
	w         io.Writer
	closer    []io.Closer
	max       int
	maxQueued int64
	oversize  OversizeFunc

	queued atomic.Int64  // bytes of the Writes waiting for writeMu, waiterBytes each included
	gaveUp atomic.Bool   // a Write gave up waiting, or failed: Read waits no more
	room   chan struct{} // 1-buffered: queued went below maxQueued, or gaveUp was set

	frame   []byte        // reused line buffer for frames longer than the bufio buffer
	readErr error         // sticky terminal read error
	writeMu chan struct{} // 1-buffered: a lock that a waiting writer can abandon
	closed  atomic.Bool
	done    chan struct{}
	once    sync.Once
}

var _ transport.Conn = (*Conn)(nil)

// New returns a Conn that reads frames from r and writes them to w. Close
// closes r and w if they implement [io.Closer]; closing is what unblocks a
// Read or Write stuck in the underlying stream (pollable files such as the
// ends of an [os.Pipe] support that, see [Std]).
func New(r io.Reader, w io.Writer, opts ...Option) *Conn {
	cfg := config{maxFrame: DefaultMaxFrameSize, maxQueued: defaultMaxQueued}
	for _, o := range opts {
		if o != nil {
			o.apply(&cfg)
		}
	}
	c := &Conn{
		r:         bufio.NewReaderSize(r, 64<<10),
		w:         w,
		max:       cfg.maxFrame,
		maxQueued: int64(cfg.maxQueued),
		oversize:  cfg.oversize,
		room:      make(chan struct{}, 1),
		writeMu:   make(chan struct{}, 1),
		done:      make(chan struct{}),
	}
	if rc, ok := r.(io.Closer); ok {
		c.closer = append(c.closer, rc)
	}
	if wc, ok := w.(io.Closer); ok && any(w) != any(r) {
		c.closer = append(c.closer, wc)
	}
	return c
}

// Read returns the next message. Blank lines are skipped. A last line without
// a newline before end of stream is still a frame. Read ignores ctx: Close
// unblocks it.
//
// Read is held back by a peer that does not read what is written to it:
// while the messages waiting for their turn to be written hold more than
// [WithMaxQueuedBytes], Read waits for them before it reads on, so that the
// peer blocks on its own writes rather than this side buffering its
// answers. Once a Write has given up waiting (its ctx ended) or failed, Read
// waits no more: the peer is taken to be gone. This suits the side that
// answers what it reads, a server.
func (c *Conn) Read(_ context.Context) (transport.Message, error) {
	for {
		if c.queued.Load() >= c.maxQueued && !c.gaveUp.Load() {
			c.waitForRoom()
		}
		if c.closed.Load() { // what is still buffered is not delivered
			return nil, fmt.Errorf("stdio: read: %w", transport.ErrClosed)
		}
		line, err := c.readLine()
		if err != nil {
			m, err := c.readFailed(err)
			if m == nil && err == nil {
				continue // an oversize frame skipped
			}
			return m, err
		}
		if len(bytes.Trim(line, " \t\r\n")) == 0 {
			continue
		}
		return transport.DecodeMessage(line)
	}
}

// readFailed returns what Read returns when reading a line failed with
// err: a frame over the bound skipped (nil, nil: Read goes on) or
// reported, any other error as it is. It is out of Read so that a frame
// read whole allocates nothing for the errors it did not have.
func (c *Conn) readFailed(err error) (transport.Message, error) {
	over, ok := errors.AsType[*oversized](err)
	if !ok {
		return nil, err
	}
	m, err := c.oversize(over.head, over.tail, over.size)
	if _, decode := errors.AsType[*transport.DecodeError](err); err != nil && !decode {
		c.readErr = err
	}
	return m, err
}

// waitForRoom returns once the queued messages hold less than maxQueued,
// a Write gave up, or the Conn is closed.
func (c *Conn) waitForRoom() {
	for c.queued.Load() >= c.maxQueued && !c.gaveUp.Load() {
		select {
		case <-c.room:
		case <-c.done:
			return
		}
	}
}

// dequeue takes n bytes off the queued ones; the Write that brings them
// below maxQueued wakes a waiting Read.
func (c *Conn) dequeue(n int64) {
	if left := c.queued.Add(-n); left < c.maxQueued && left+n >= c.maxQueued {
		c.wakeReader()
	}
}

// giveUp turns the wait of Read off for good.
func (c *Conn) giveUp() {
	if !c.gaveUp.Swap(true) {
		c.wakeReader()
	}
}

func (c *Conn) wakeReader() {
	select {
	case c.room <- struct{}{}:
	default: // a wake is pending already
	}
}

// readLine returns the next line without its newline, valid until the next
// call. It never holds more than max bytes of one frame: a longer one is
// the end of the Conn, or, with an OversizeFunc, skipped and returned as
// an *oversized error.
func (c *Conn) readLine() ([]byte, error) {
	if c.readErr != nil {
		return nil, c.readErr
	}
	if cap(c.frame) > keptFrame {
		c.frame = nil // a large frame's buffer is not kept for the next one
	}
	c.frame = c.frame[:0]
	for {
		chunk, err := c.r.ReadSlice('\n')
		n := len(c.frame) + len(chunk)
		if err == nil {
			n-- // the newline is not part of the frame
			if len(chunk) >= 2 && chunk[len(chunk)-2] == '\r' {
				n-- // nor is the carriage return of a CRLF
			}
		}
		if n > c.max && c.oversize != nil {
			return nil, c.skip(chunk, err)
		}
		if n > c.max {
			c.readErr = fmt.Errorf("stdio: read: %w: more than %d bytes", transport.ErrFrameTooLarge, c.max)
			return nil, c.readErr
		}
		switch {
		case err == nil:
			if len(c.frame) == 0 {
				return chunk[:len(chunk)-1], nil // fast path: the whole line is in the buffer
			}
			c.frame = append(c.frame, chunk[:len(chunk)-1]...)
			return c.frame, nil
		case errors.Is(err, bufio.ErrBufferFull):
			c.frame = append(c.frame, chunk...)
		case errors.Is(err, io.EOF) && len(c.frame)+len(chunk) > 0:
			c.frame = append(c.frame, chunk...)
			c.readErr = transport.WrapIOError("stdio: read", c.closed.Load(), err)
			return c.frame, nil
		default:
			c.readErr = transport.WrapIOError("stdio: read", c.closed.Load(), err)
			return nil, c.readErr
		}
	}
}

// keptFrame is the largest line buffer kept from one frame to the next.
const keptFrame = 1 << 20

// oversized is a frame over the bound that readLine skipped: its first and
// last bytes and its size.
type oversized struct {
	head, tail []byte
	size       int64
}

func (o *oversized) Error() string {
	return fmt.Sprintf("stdio: read: %v: %d bytes", transport.ErrFrameTooLarge, o.size)
}

func (o *oversized) Unwrap() error { return transport.ErrFrameTooLarge }

// skip reads the rest of a frame over the bound, of which c.frame and
// chunk (what ReadSlice returned with err) are read, holding no more of
// it than its head and tail, and returns it as an *oversized error; or the
// error that ended the stream before its end.
func (c *Conn) skip(chunk []byte, err error) error {
	o := &oversized{size: int64(len(c.frame))}
	o.head = append(make([]byte, 0, min(len(c.frame)+len(chunk), oversizeHead)), c.frame[:min(len(c.frame), oversizeHead)]...)
	o.tail = keepTail(o.tail, c.frame)
	c.frame = c.frame[:0]
	for {
		o.size += int64(len(chunk))
		if room := oversizeHead - len(o.head); room > 0 {
			o.head = append(o.head, chunk[:min(room, len(chunk))]...)
		}
		o.tail = keepTail(o.tail, chunk)
		switch {
		case err == nil: // the newline (and a CRLF's carriage return) is not part of it
			o.size--
			o.tail = o.tail[:len(o.tail)-1]
			if len(o.tail) > 0 && o.tail[len(o.tail)-1] == '\r' {
				o.size--
				o.tail = o.tail[:len(o.tail)-1]
			}
			o.tail = o.tail[max(0, len(o.tail)-oversizeTail):]
			return o
		case errors.Is(err, bufio.ErrBufferFull):
		case errors.Is(err, io.EOF):
			c.readErr = transport.WrapIOError("stdio: read", c.closed.Load(), err)
			o.tail = o.tail[max(0, len(o.tail)-oversizeTail):]
			return o
		default:
			c.readErr = transport.WrapIOError("stdio: read", c.closed.Load(), err)
			return c.readErr
		}
		chunk, err = c.r.ReadSlice('\n')
	}
}

// keepTail returns tail followed by b, cut to its last oversizeTail bytes
// and a CRLF, in tail's buffer.
func keepTail(tail, b []byte) []byte {
	const keep = oversizeTail + 2
	if len(b) >= keep {
		return append(tail[:0], b[len(b)-keep:]...)
	}
	if extra := len(tail) + len(b) - keep; extra > 0 {
		tail = append(tail[:0], tail[extra:]...)
	}
	return append(tail, b...)
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// Write encodes msg as one line and writes it. Writers are serialized; a
// writer waiting for its turn gives up when ctx ends or the Conn closes,
// and so does one blocked writing to a pollable file (a pipe, a socket)
// when ctx ends: the rest of its line is then written in the background,
// before any other, until the Conn closes.
func (c *Conn) Write(ctx context.Context, msg transport.Message) error {
	if c.closed.Load() {
		return fmt.Errorf("stdio: write: %w", transport.ErrClosed)
	}
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	b, err := transport.AppendMessage((*bp)[:0], msg)
	if err != nil {
		return err
	}
	line, valid := jsonscan.OneLine(b) // a frame is a line
	if !valid {
		return errors.New("stdio: write: invalid JSON in message")
	}
	if len(line) != len(b) { // compacted: valid JSON loses its CR and LF
		b = append(b[:0], line...)
	}
	b = append(b, '\n')
	*bp = b
	n := int64(len(b) + waiterBytes)
	c.queued.Add(n)
	select {
	case c.writeMu <- struct{}{}:
		c.dequeue(n)
		if ctx.Err() != nil { // ended meanwhile: as though still waiting
			<-c.writeMu
			c.giveUp()
			return context.Cause(ctx)
		}
	case <-c.done:
		c.dequeue(n)
		return fmt.Errorf("stdio: write: %w", transport.ErrClosed)
	case <-ctx.Done():
		c.dequeue(n)
		c.giveUp()
		return context.Cause(ctx)
	}
	return c.writeHeld(ctx, b)
}

// writeHeld writes frame b, holding writeMu, and releases it. When the
// writer's writes can be interrupted (a pollable file, such as an end of
// an [os.Pipe]: see deadliner) and ctx ends while one blocks, writeHeld
// returns ctx's cause at once; the rest of a frame partly written is
// written in the background, writeMu still held, so that the stream stays
// whole lines: later writers wait for it within their own ctx, and Close
// ends it.
func (c *Conn) writeHeld(ctx context.Context, b []byte) error {
	dw, ok := c.w.(deadliner)
	if !ok || ctx.Done() == nil {
		defer func() { <-c.writeMu }()
		return c.wrote(c.w.Write(b))
	}
	// Most frames fit in the pipe at once: only a write that would block
	// pays for being interruptible (a channel and an AfterFunc on ctx).
	done, err := writeNow(c.w, b)
	if err != nil || done == len(b) {
		defer func() { <-c.writeMu }()
		return c.wrote(done, err)
	}
	b = b[done:]
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		_ = dw.SetWriteDeadline(time.Unix(1, 0)) // in the past: a blocked Write returns
		close(fired)
	})
	n, err := c.w.Write(b)
	if !stop() {
		<-fired
		_ = dw.SetWriteDeadline(time.Time{})
	}
	if err == nil || !errors.Is(err, os.ErrDeadlineExceeded) {
		defer func() { <-c.writeMu }()
		return c.wrote(n, err)
	}
	c.giveUp()
	if n == 0 && done == 0 {
		<-c.writeMu
		return context.Cause(ctx)
	}
	rest := bytes.Clone(b[n:]) // b goes back to bufPool
	go func() {
		defer func() { <-c.writeMu }()
		_, _ = c.w.Write(rest)
	}()
	return context.Cause(ctx)
}

// wrote returns the error of a Write that returned err, after giving up
// Read's wait when it failed (see Read).
func (c *Conn) wrote(_ int, err error) error {
	if err != nil {
		c.giveUp()
		return transport.WrapIOError("stdio: write", c.closed.Load(), err)
	}
	return nil
}

// deadliner is a writer whose blocked Write a deadline interrupts, with
// [os.ErrDeadlineExceeded]: an [os.File] the runtime polls (pipes,
// sockets). For a file it does not poll, SetWriteDeadline fails and
// nothing is interrupted.
type deadliner interface {
	SetWriteDeadline(t time.Time) error
}

// Close closes the underlying reader and writer (those that are closers) and
// makes every later Read and Write fail with [transport.ErrClosed]. It is
// idempotent and returns the first close error.
func (c *Conn) Close() error {
	var err error
	c.once.Do(func() {
		c.closed.Store(true)
		close(c.done)
		for _, cl := range c.closer {
			err = errors.Join(err, cl.Close())
		}
	})
	return err
}
