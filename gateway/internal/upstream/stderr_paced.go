package upstream

import (
	"io"
	"time"
)

// stderrPace is how long the reader of a process's stderr lets lines
// gather after a read that drained the pipe: an upstream that logs a
// line per request then costs a read, and a wake-up of the reader, every
// stderrPace rather than every line. The pipe (64 KiB on Linux) holds
// what comes meanwhile unless the upstream writes more in stderrPace,
// and a read that fills its buffer is followed by the next at once.
const stderrPace = 5 * time.Millisecond

// pacedReader is an io.Reader that waits stderrPace before a read that
// follows one which did not fill its buffer.
type pacedReader struct {
	r       io.Reader
	drained time.Time           // when the last read left the pipe empty; zero after a full one
	sleep   func(time.Duration) // time.Sleep when nil
}

// Read reads from r, first waiting what is left of stderrPace when the
// last read drained it.
func (p *pacedReader) Read(b []byte) (int, error) {
	if !p.drained.IsZero() {
		if wait := stderrPace - time.Since(p.drained); wait > 0 {
			sleep := p.sleep
			if sleep == nil {
				sleep = time.Sleep
			}
			sleep(wait)
		}
	}
	n, err := p.r.Read(b)
	p.drained = time.Time{}
	if n < len(b) {
		p.drained = time.Now()
	}
	return n, err
}
