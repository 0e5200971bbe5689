package server

import "iter"

// sessionList is the set of sessions a server serves: a doubly linked list
// threaded through the sessions themselves (Session.link), so that adding
// and removing one, which every stateless request does, hashes nothing and
// allocates nothing. The server's mu guards it and every link in it.
type sessionList struct {
	head *Session
	n    int
}

// sessionLink is a session's place in its server's sessionList.
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

// len returns the number of sessions in l.
func (l *sessionList) len() int { return l.n }

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
