package asyncwriter

import (
	"bytes"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of [New].
const (
	DefaultBufferSize    = 1 << 20                // bytes held before lines are dropped
	DefaultFlushInterval = 100 * time.Millisecond // longest a line waits in the buffer
)

// Option configures [New]; a nil Option is ignored.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	size     int
	interval time.Duration
	block    time.Duration
}

// WithBufferSize sets how many bytes the buffer holds; n <= 0, or no
// option, means [DefaultBufferSize].
func WithBufferSize(n int) Option {
	return optionFunc(func(c *config) { c.size = n })
}

// WithFlushInterval sets the longest time a line waits in the buffer; d <=
// 0, or no option, means [DefaultFlushInterval].
func WithFlushInterval(d time.Duration) Option {
	return optionFunc(func(c *config) { c.interval = d })
}

// WithBlock makes a Write that finds the buffer full wait up to d for the
// destination to take what is buffered, and drop its lines (counted by
// [Writer.Dropped]) only then: a writer that must not lose lines to a
// short stall of its destination trades a bounded wait of its callers for
// them. d <= 0, or no option, drops at once. A Write larger than the
// buffer is dropped at once.
func WithBlock(d time.Duration) Option {
	return optionFunc(func(c *config) { c.block = d })
}

// Writer buffers what is written to it and writes it to its destination
// from a goroutine of its own: within a flush interval of the first line
// the buffer took, and as soon as the buffer is half full. An idle Writer
// has no timer running: its goroutine sleeps until a line comes. A Write never waits for the destination (but
// see [WithBlock]): it copies p into the buffer, or, when the buffer cannot
// take all of p, drops p whole and counts its lines ([Writer.Dropped]).
// Each Write is kept whole
// and in order, so a writer that writes one record per call (a
// [log/slog.Handler]) never has a record cut or interleaved. Errors of the
// destination are ignored: there is no one to report them to.
//
// [Writer.Close] writes what is buffered and stops the goroutine; after it,
// writes go to the destination at once, so nothing written before the
// process exits is lost if Close is called before it does. All methods are
// safe for concurrent use. Writes to the destination are never concurrent.
type Writer struct {
	out      io.Writer
	size     int
	interval time.Duration
	block    time.Duration

	mu      sync.Mutex // guards buf, kicked, closed, waiters and drained
	buf     []byte
	kicked  bool // a flush was asked for since the last one
	closed  bool
	waiters int           // Writes waiting for room (WithBlock)
	drained chan struct{} // closed when the buffer is taken, while waiters > 0

	outMu sync.Mutex // serializes writes to out; guards spare
	spare []byte

	dropped atomic.Uint64
	first   chan struct{} // the buffer took a line when it was empty: arm the timer
	wakes   atomic.Uint64 // times run woke: what an idle process pays
	kick    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
}

// New returns a Writer to out and starts its goroutine; call
// [Writer.Close] to stop it. out must not be nil.
func New(out io.Writer, opts ...Option) *Writer {
	cfg := config{size: DefaultBufferSize, interval: DefaultFlushInterval}
	for _, o := range opts {
		if o != nil {
			o.apply(&cfg)
		}
	}
	if cfg.size <= 0 {
		cfg.size = DefaultBufferSize
	}
	if cfg.interval <= 0 {
		cfg.interval = DefaultFlushInterval
	}
	w := &Writer{
		out:      out,
		size:     cfg.size,
		interval: cfg.interval,
		block:    cfg.block,
		drained:  make(chan struct{}),
		first:    make(chan struct{}, 1),
		kick:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	go w.run()
	return w
}

// Write buffers p, or drops it when the buffer cannot take it whole (then
// [Writer.Dropped] grows by its number of lines), after waiting for room as
// long as [WithBlock] allows. It returns len(p) and no error in both cases,
// never waiting for the destination otherwise. After [Writer.Close] it
// writes p to the destination at once and returns what the destination
// returns.
func (w *Writer) Write(p []byte) (int, error) {
	var timer *time.Timer
	w.mu.Lock()
	for !w.closed && len(w.buf)+len(p) > w.size {
		if w.block <= 0 || len(p) > w.size {
			w.mu.Unlock()
			w.dropped.Add(lines(p))
			return len(p), nil
		}
		if timer == nil {
			timer = time.NewTimer(w.block)
			defer timer.Stop()
		}
		drained := w.drained
		w.waiters++
		w.kicked = true
		w.mu.Unlock()
		select {
		case w.kick <- struct{}{}:
		default:
		}
		timedOut := false
		select {
		case <-drained:
		case <-timer.C:
			timedOut = true
		}
		w.mu.Lock()
		w.waiters--
		if timedOut && !w.closed && len(w.buf)+len(p) > w.size {
			w.mu.Unlock()
			w.dropped.Add(lines(p))
			return len(p), nil
		}
	}
	if w.closed {
		w.mu.Unlock()
		w.outMu.Lock() // after Close's final flush, which holds it
		defer w.outMu.Unlock()
		return w.out.Write(p)
	}
	wasEmpty := len(w.buf) == 0
	w.buf = append(w.buf, p...)
	kick := !w.kicked && len(w.buf) >= w.size/2
	if kick {
		w.kicked = true
	}
	w.mu.Unlock()
	if wasEmpty {
		select {
		case w.first <- struct{}{}:
		default:
		}
	}
	if kick {
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
	return len(p), nil
}

// lines is the number of lines in p; a last line without a newline counts.
func lines(p []byte) uint64 {
	n := bytes.Count(p, []byte{'\n'})
	if len(p) > 0 && p[len(p)-1] != '\n' {
		n++
	}
	return uint64(max(n, 1))
}

// Dropped returns the number of lines dropped so far because the buffer was
// full.
func (w *Writer) Dropped() uint64 { return w.dropped.Load() }

// Flush writes what is buffered to the destination now, and returns the
// destination's error.
func (w *Writer) Flush() error { return w.flush(false) }

// Close writes what is buffered, stops the goroutine and makes later writes
// go to the destination directly. It returns the error of the last write to
// the destination; calling it again does nothing and returns nil. It does
// not close the destination.
func (w *Writer) Close() error {
	var err error
	w.once.Do(func() {
		close(w.stop)
		<-w.done
		err = w.flush(true)
	})
	return err
}

// flush writes the buffer to out; with closing, it also marks w closed, so
// that a Write that sees it waits for this flush and then writes directly,
// in order.
func (w *Writer) flush(closing bool) error {
	w.outMu.Lock()
	defer w.outMu.Unlock()
	w.mu.Lock()
	pending := w.buf
	w.buf, w.spare = w.spare[:0], nil
	w.kicked = false
	if closing {
		w.closed = true
	}
	if w.waiters > 0 {
		close(w.drained)
		w.drained = make(chan struct{})
	}
	w.mu.Unlock()
	var err error
	if len(pending) > 0 {
		_, err = w.out.Write(pending)
	}
	w.spare = pending[:0]
	return err
}

// run flushes the buffer an interval after it took its first line, or
// when kicked; between, with nothing buffered, it waits without a timer.
func (w *Writer) run() {
	defer close(w.done)
	t := time.NewTimer(w.interval)
	t.Stop()
	defer t.Stop()
	var due <-chan time.Time // t.C while the timer runs
	for {
		select {
		case <-w.stop:
			return
		case <-w.first:
			w.wakes.Add(1)
			if due == nil {
				t.Reset(w.interval)
				due = t.C
			}
			continue
		case <-due:
			due = nil
		case <-w.kick:
		}
		w.wakes.Add(1)
		_ = w.flush(false)
	}
}
