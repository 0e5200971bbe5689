package oauth

import (
	"container/list"
	"hash/maphash"
	"time"

	"github.com/vigil-mcp/vigil/middleware/auth"
)

// lru is a bounded least-recently-used map from token hashes to values of
// type V, each good until its own deadline and only under the generation
// it was put with. An entry may name its holder (a principal, as an
// lruHolder), who holds at most share entries: a holder at its share
// replaces its own least recently used entry, never another's, so that
// no one holder pushes everyone else's out. It is not safe for concurrent
// use: its owner locks it.
type lru[V any] struct {
	max   int
	share int // most entries one holder has; 0: no bound
	m     map[tokenHash]*list.Element
	ll    list.List                    // of *lruEntry[V], most recently used first
	held  map[lruHolder]*lruHolding[V] // by holder, only for holders with entries
}

// lruHolder names the holder of an lru entry; 0 is none.
type lruHolder uint64

// cacheShare is the share of a verdictCache (of each shard), or of an
// exchangeCache, one principal may hold: its tokens beyond it replace its
// own least recently used, never another principal's.
const cacheShare = 8 // an eighth

// shareOf returns the share of a cache (or shard) of size entries one
// holder may hold: an eighth, none below 8 entries (no bound).
func shareOf(size int) int { return size / cacheShare }

// holderOf returns the holder of the entries of principal p under seed (a
// hash of its Key; 0, none, for a refusal's).
func holderOf(seed maphash.Seed, p *auth.Principal) lruHolder {
	if p == nil {
		return 0
	}
	return lruHolder(maphash.String(seed, p.Key()) | 1)
}

// lruHolding is a holder's entries, most recently used first, linked
// through the entries themselves.
type lruHolding[V any] struct {
	n              int
	newest, oldest *lruEntry[V]
}

type lruEntry[V any] struct {
	key    tokenHash
	v      V
	until  time.Time // the entry is used while now is before until
	gen    uint64
	holder lruHolder
	// held is the holding of holder (nil without one), and newer and
	// older the entries next to this one in it.
	held         *lruHolding[V]
	newer, older *lruEntry[V]
}

// init makes l an empty lru of at most size entries, at most share of
// them a holder's (0: no bound).
func (l *lru[V]) init(size, share int) {
	l.max, l.share = size, share
	l.m, l.held = make(map[tokenHash]*list.Element), make(map[lruHolder]*lruHolding[V])
}

// get returns the value under k and until when it holds, if it is still
// good at now under generation gen; an entry that is not is dropped.
func (l *lru[V]) get(k *tokenHash, now time.Time, gen uint64) (V, time.Time, bool) {
	var zero V
	el, ok := l.m[*k]
	if !ok {
		return zero, time.Time{}, false
	}
	e := el.Value.(*lruEntry[V])
	if !now.Before(e.until) || e.gen != gen {
		l.remove(el)
		return zero, time.Time{}, false
	}
	l.ll.MoveToFront(el)
	e.touch()
	return e.v, e.until, true
}

// put keeps v under k until until under generation gen, held by h (0:
// no holder). When h holds its share already, its own least recently used
// entry goes; else, when l is full, the least recently used entry. The
// entry that goes is reused, so that a full cache does not allocate one.
func (l *lru[V]) put(k *tokenHash, v V, until time.Time, gen uint64, h lruHolder) {
	if el, ok := l.m[*k]; ok {
		e := el.Value.(*lruEntry[V])
		e.v, e.until, e.gen = v, until, gen
		l.ll.MoveToFront(el)
		if e.holder != h {
			l.unhold(e)
			l.hold(e, h)
		} else {
			e.touch()
		}
		return
	}
	var e *lruEntry[V]
	if hd := l.atShare(h); hd != nil {
		e = l.remove(l.m[hd.oldest.key])
	} else if l.ll.Len() >= l.max {
		e = l.remove(l.ll.Back())
	} else {
		e = new(lruEntry[V])
	}
	*e = lruEntry[V]{key: *k, v: v, until: until, gen: gen}
	l.m[*k] = l.ll.PushFront(e)
	l.hold(e, h)
}

// atShare returns h's holding if it holds its share, else nil.
func (l *lru[V]) atShare(h lruHolder) *lruHolding[V] {
	if h == 0 || l.share <= 0 {
		return nil
	}
	if hd := l.held[h]; hd != nil && hd.n >= l.share {
		return hd
	}
	return nil
}

// remove drops el's entry and returns it, out of its holding.
func (l *lru[V]) remove(el *list.Element) *lruEntry[V] {
	e := el.Value.(*lruEntry[V])
	l.ll.Remove(el)
	delete(l.m, e.key)
	l.unhold(e)
	return e
}

// hold makes e h's newest entry (nothing when h is 0).
func (l *lru[V]) hold(e *lruEntry[V], h lruHolder) {
	e.holder = h
	if h == 0 {
		return
	}
	hd := l.held[h]
	if hd == nil {
		hd = &lruHolding[V]{}
		l.held[h] = hd
	}
	e.held = hd
	hd.n++
	hd.link(e)
}

// unhold takes e out of its holder's entries, and forgets a holder left
// with none.
func (l *lru[V]) unhold(e *lruEntry[V]) {
	hd := e.held
	if hd == nil {
		return
	}
	hd.unlink(e)
	e.held = nil
	if hd.n--; hd.n == 0 {
		delete(l.held, e.holder)
	}
}

// touch makes e its holder's most recently used entry.
func (e *lruEntry[V]) touch() {
	if hd := e.held; hd != nil && hd.newest != e {
		hd.unlink(e)
		hd.link(e)
	}
}

// link puts e first among hd's entries.
func (hd *lruHolding[V]) link(e *lruEntry[V]) {
	e.newer, e.older = nil, hd.newest
	if hd.newest != nil {
		hd.newest.newer = e
	} else {
		hd.oldest = e
	}
	hd.newest = e
}

// unlink takes e out of hd's entries.
func (hd *lruHolding[V]) unlink(e *lruEntry[V]) {
	if e.newer != nil {
		e.newer.older = e.older
	} else {
		hd.newest = e.older
	}
	if e.older != nil {
		e.older.newer = e.newer
	} else {
		hd.oldest = e.newer
	}
	e.newer, e.older = nil, nil
}

// len returns the number of entries, expired ones included.
func (l *lru[V]) len() int { return l.ll.Len() }
