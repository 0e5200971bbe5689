package server

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/transport/memory"
)

// TestSessionList adds and removes sessions at the head, the tail and in
// the middle, and checks the order, the count and every link against a
// slice kept beside it.
func TestSessionList(t *testing.T) {
	var l sessionList
	ss := make([]*Session, 5)
	for i := range ss {
		ss[i] = &Session{id: string(rune('a' + i))}
	}
	var want []*Session // newest first
	check := func(step string) {
		t.Helper()
		assert.Equal(t, want, slices.Collect(l.all()), step)
		for i, s := range want {
			var prev, next *Session
			if i > 0 {
				prev = want[i-1]
			}
			if i+1 < len(want) {
				next = want[i+1]
			}
			assert.Same(t, prev, s.link.prev, "%s: prev of %s", step, s.id)
			assert.Same(t, next, s.link.next, "%s: next of %s", step, s.id)
		}
	}
	check("empty")
	for _, s := range ss {
		l.add(s)
		want = append([]*Session{s}, want...)
		check("add " + s.id)
	}
	for _, i := range []int{2, 4, 0} { // the middle, the head, the tail
		l.remove(ss[i])
		want = slices.DeleteFunc(want, func(s *Session) bool { return s == ss[i] })
		check("remove " + ss[i].id)
	}
	l.remove(ss[2]) // not in the list any more
	check("remove again")
	l.add(ss[2])
	want = append([]*Session{ss[2]}, want...)
	check("add back")
	for _, s := range slices.Clone(want) {
		l.remove(s)
	}
	want = nil
	check("all removed")
	assert.Nil(t, l.head)
}

// TestSessionShards checks that sessions are spread over the server's
// lists, that Sessions sees them all, and that Shutdown refuses new ones
// and returns once the last one is gone, whichever list it was in.
func TestSessionShards(t *testing.T) {
	srv := New()
	sessions := make([]*Session, 100)
	for i := range sessions {
		_, conn := memory.NewPair()
		sessions[i] = newSession(context.Background(), srv, conn)
		require.True(t, srv.track(sessions[i]))
	}
	used := 0
	for i := range srv.sessions {
		if srv.sessions[i].list.head != nil {
			used++
		}
	}
	assert.Greater(t, used, sessionShardCount/2, "lists used by %d sessions", len(sessions))
	assert.ElementsMatch(t, sessions, srv.Sessions())

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- srv.Shutdown(ctx) }()
	// Shutdown has begun once it refuses new sessions.
	for {
		_, conn := memory.NewPair()
		probe := newSession(context.Background(), srv, conn)
		if !srv.track(probe) {
			break
		}
		srv.untrack(probe)
	}
	for _, ss := range sessions[:len(sessions)-1] {
		srv.untrack(ss)
	}
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned with a session left: %v", err)
	default:
	}
	srv.untrack(sessions[len(sessions)-1])
	require.NoError(t, <-done)
	assert.Empty(t, srv.Sessions())
}
