package server

import (
	"iter"
	"math/rand/v2"
	"sync"
)

// sessionShardCount is how many lists a server's sessions are spread
// over.
const sessionShardCount = 16

// sessionShards are the sessions a server serves, spread over lists of
// their own, each with its own lock. Every stateless request is a session
// that is added and removed: with one list under the server's lock, that
// lock was, under load, one that requests queued up behind (a holder
// preempted while the other cores' requests wait). A session's list is
// picked at random when it is made (Session.shard).
type sessionShards [sessionShardCount]struct {
	mu   sync.Mutex // guards list and every link in it
	list sessionList
	_    [64]byte // each lock on a cache line of its own
}

// pickSessionShard returns the list for a new session.
func pickSessionShard() uint8 {
	return uint8(rand.N(sessionShardCount)) // math/rand/v2's per-thread source: no lock
}

// snapshot returns the sessions in every list, in one allocation (unless
// sessions come in while it counts).
func (sh *sessionShards) snapshot() []*Session {
	n := 0
	for i := range sh {
		l := &sh[i]
		l.mu.Lock()
		n += l.list.n
		l.mu.Unlock()
	}
	out := make([]*Session, 0, n)
	for i := range sh {
		l := &sh[i]
		l.mu.Lock()
		for ss := range l.list.all() {
			out = append(out, ss)
		}
		l.mu.Unlock()
	}
	return out
}

// empty reports whether no list holds a session.
func (sh *sessionShards) empty() bool {
	for i := range sh {
		l := &sh[i]
		l.mu.Lock()
		n := l.list.n
		l.mu.Unlock()
		if n > 0 {
			return false
		}
	}
	return true
}

// sessionList is a set of the sessions a server serves (one of its
// sessionShards): a doubly linked list threaded through the sessions
// themselves (Session.link), so that adding and removing one, which every
// stateless request does, hashes nothing and allocates nothing. Its
// shard's mu guards it and every link in it.
type sessionList struct {
	head *Session
	n    int // how many
}

// sessionLink is a session's place in its sessionList.
type sessionLink struct {
	prev, next *Session
	in         bool // in the list
}

// add puts ss, which is in no list, at the head of l.
func (l *sessionList) add(ss *Session) {
	ss.link = sessionLink{next: l.head, in: true}
	if l.head != nil {
		l.head.link.prev = ss
	}
	l.head = ss
	l.n++
}

// remove takes ss out of l; it does nothing when ss is not in it.
func (l *sessionList) remove(ss *Session) {
	if !ss.link.in {
		return
	}
	if prev := ss.link.prev; prev != nil {
		prev.link.next = ss.link.next
	} else {
		l.head = ss.link.next
	}
	if next := ss.link.next; next != nil {
		next.link.prev = ss.link.prev
	}
	ss.link = sessionLink{}
	l.n--
}

// all yields the sessions of l, newest first. The yield function must not
// change l.
func (l *sessionList) all() iter.Seq[*Session] {
	return func(yield func(*Session) bool) {
		for ss := l.head; ss != nil; ss = ss.link.next {
			if !yield(ss) {
				return
			}
		}
	}
}
