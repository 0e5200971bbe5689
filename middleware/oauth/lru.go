package oauth

import (
	"container/list"
	"time"
)

// lru is a bounded least-recently-used map from token hashes to values of
// type V, each good until its own deadline and only under the generation
// it was put with. It is not safe for concurrent use: its owner locks it.
type lru[V any] struct {
	max int
	m   map[tokenHash]*list.Element
	ll  list.List // of *lruEntry[V], most recently used first
}

type lruEntry[V any] struct {
	key   tokenHash
	v     V
	until time.Time // the entry is used while now is before until
	gen   uint64
}

// init makes l an empty lru of at most size entries.
func (l *lru[V]) init(size int) {
	l.max, l.m = size, make(map[tokenHash]*list.Element)
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
		l.ll.Remove(el)
		delete(l.m, *k)
		return zero, time.Time{}, false
	}
	l.ll.MoveToFront(el)
	return e.v, e.until, true
}

// put keeps v under k until until under generation gen, evicting the
// least recently used entry when full; the evicted entry is reused, so
// that a full cache does not allocate one.
func (l *lru[V]) put(k *tokenHash, v V, until time.Time, gen uint64) {
	if el, ok := l.m[*k]; ok {
		e := el.Value.(*lruEntry[V])
		e.v, e.until, e.gen = v, until, gen
		l.ll.MoveToFront(el)
		return
	}
	var e *lruEntry[V]
	if l.ll.Len() >= l.max {
		el := l.ll.Back()
		e = el.Value.(*lruEntry[V])
		delete(l.m, e.key)
		l.ll.Remove(el)
	} else {
		e = new(lruEntry[V])
	}
	*e = lruEntry[V]{key: *k, v: v, until: until, gen: gen}
	l.m[*k] = l.ll.PushFront(e)
}

// len returns the number of entries, expired ones included.
func (l *lru[V]) len() int { return l.ll.Len() }
