package seal

import (
	"errors"
	"sync"
	"time"
)

// The verdicts of [Replay.Admit] on a message it refuses.
var (
	// ErrStale is a stamp further than the window from now, either way.
	ErrStale = errors.New("seal: stale message")
	// ErrReplayed is a nonce already admitted.
	ErrReplayed = errors.New("seal: replayed message")
)

// Replay admits each authenticated stamp once, and only while it is
// fresh: within its window of the local clock, either way (which also
// bears the senders' clock skew). It remembers the nonces of the stamps it
// admitted, grouped by their time, for as long as they could be admitted,
// and never more than max of them: past that it forgets its oldest group
// and, to stay sound, refuses every stamp as old as that group as stale.
// Its methods are safe for concurrent use.
type Replay struct {
	window time.Duration
	max    int

	mu    sync.Mutex
	floor int64 // the oldest group still admitted
	n     int
	seen  map[int64]map[[NonceSize]byte]struct{} // by group: the stamp's time / window
}

// NewReplay returns a Replay with the given window (positive) that
// remembers at most most nonces (at least 1).
func NewReplay(window time.Duration, most int) *Replay {
	return &Replay{window: window, max: max(most, 1), seen: make(map[int64]map[[NonceSize]byte]struct{})}
}

// Admit returns nil for a stamp it admits, at most once each, ErrStale for
// one out of the window of now, and ErrReplayed for one it admitted
// before.
func (r *Replay) Admit(now time.Time, st Stamp) error {
	if d := now.Sub(st.Time); d > r.window || d < -r.window {
		return ErrStale
	}
	group := st.Time.UnixNano() / int64(r.window)
	r.mu.Lock()
	defer r.mu.Unlock()
	// Groups wholly out of the window are forgotten.
	if low := (now.UnixNano() - int64(r.window)) / int64(r.window); r.floor < low {
		for g := range r.seen {
			if g < low {
				r.forget(g)
			}
		}
		r.floor = low
	}
	if group < r.floor {
		return ErrStale
	}
	g := r.seen[group]
	if _, dup := g[st.Nonce]; dup {
		return ErrReplayed
	}
	for r.n >= r.max && r.floor < group {
		r.forget(r.floor) // at most three groups are in the window
		r.floor++
	}
	if r.n >= r.max { // every nonce remembered is of this very group
		return ErrStale
	}
	if g == nil {
		g = make(map[[NonceSize]byte]struct{})
		r.seen[group] = g
	}
	g[st.Nonce] = struct{}{}
	r.n++
	return nil
}

func (r *Replay) forget(group int64) {
	r.n -= len(r.seen[group])
	delete(r.seen, group)
}
