package streamable

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/replication"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// stateCluster is a Cluster whose StoreState reaches others replicas,
// none of which answers unless the test says so, and whose Publish
// records the relays.
type stateCluster struct {
	replication.Cluster
	others   int
	touchErr error // what Touch returns
	touches  int

	mu        sync.Mutex
	published []replication.Relay
}

func (c *stateCluster) Replica() string { return "a" }

func (c *stateCluster) StoreState(context.Context, string, []byte) (int, error) {
	return c.others, nil
}

func (c *stateCluster) Delete(context.Context, string) (int, error) {
	return c.others, nil
}

func (c *stateCluster) Touch(context.Context, string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.touches++
	return c.touchErr
}

func (c *stateCluster) Publish(_ context.Context, _ string, r replication.Relay) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.published = append(c.published, r)
	return nil
}

// stateSession returns a session with a view on c, logging to logs.
func stateSession(c replication.Cluster, logs *bytes.Buffer) *session {
	h := &Endpoint{cfg: config{logger: slog.New(slog.NewTextHandler(logs, nil))}}
	return &session{h: h, id: "s1", done: make(chan struct{}), view: newView(c, nil)}
}

// TestStoreStateWaitsForReplicas: StoreState returns once every replica it
// reached answered with the state's digest; without answers it gives up
// after stateSeenWait and says so; on a relay's delivery goroutine, which
// delivers the answers, it does not wait at all.
func TestStoreStateWaitsForReplicas(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs bytes.Buffer
		c := &stateCluster{others: 2}
		s := stateSession(c, &logs)
		conn := sharedConn{s}
		ctx := context.Background()

		state := []byte(`{"logLevel":"warning"}`)
		digest := sha256.Sum256(state)
		stored := make(chan time.Duration, 1)
		start := time.Now()
		go func() {
			_ = conn.StoreState(ctx, state)
			stored <- time.Since(start)
		}()
		synctest.Wait() // durably blocked: waiting for the replicas
		s.view.stateSeenBy("b", digest[:])
		s.view.stateSeenBy("b", digest[:]) // the same replica twice counts once
		other := sha256.Sum256([]byte(`{}`))
		s.view.stateSeenBy("c", other[:]) // another state's answer does not count
		synctest.Wait()
		select {
		case <-stored:
			t.Fatal("StoreState returned before every replica answered")
		default:
		}
		s.view.stateSeenBy("c", digest[:])
		assert.Zero(t, <-stored, "returned as the last replica answered")
		assert.Empty(t, logs.String())

		start = time.Now()
		require.NoError(t, conn.StoreState(ctx, state))
		assert.Equal(t, stateSeenWait, time.Since(start), "no answer: it gives up after stateSeenWait")
		assert.Contains(t, logs.String(), "did not confirm its new state")

		start = time.Now()
		require.NoError(t, conn.StoreState(context.WithValue(ctx, relayedKey{}, true), state))
		assert.Zero(t, time.Since(start), "on a relay's goroutine it does not wait")
		s.view.mu.Lock()
		assert.Empty(t, s.view.stateWait, "every wait was dropped")
		s.view.mu.Unlock()
	})
}

// TestStateRelayedBeforeUpdate: a state relayed before the server set its
// update function is handed to it by SetStateUpdate, one relayed after
// goes straight to it, and each is answered with its digest.
func TestStateRelayedBeforeUpdate(t *testing.T) {
	var logs bytes.Buffer
	c := &stateCluster{}
	s := stateSession(c, &logs)
	conn := sharedConn{s}
	assert.Nil(t, conn.SharedState())

	s.stateRelayed([]byte(`1`))
	var applied []string
	conn.SetStateUpdate(func(state []byte) { applied = append(applied, string(state)) })
	assert.Equal(t, []string{"1"}, applied, "the state that came before is applied at once")
	s.stateRelayed([]byte(`2`))
	assert.Equal(t, []string{"1", "2"}, applied)

	d1, d2 := sha256.Sum256([]byte(`1`)), sha256.Sum256([]byte(`2`))
	c.mu.Lock()
	defer c.mu.Unlock()
	require.Len(t, c.published, 2)
	for i, d := range [][sha256.Size]byte{d1, d2} {
		assert.Equal(t, replication.RelayStateSeen, c.published[i].Kind)
		assert.Equal(t, d[:], c.published[i].Data)
	}
}

// TestFollowStateKeepsRelayedState: the record's state read once the view
// follows the session's relays is taken unless a relay brought one
// meanwhile, which is at least as new.
func TestFollowStateKeepsRelayedState(t *testing.T) {
	var logs bytes.Buffer
	s := stateSession(&stateCluster{}, &logs)
	conn := sharedConn{s}
	s.view.followState([]byte(`record`))
	assert.Equal(t, []byte(`record`), conn.SharedState())

	s = stateSession(&stateCluster{}, &logs)
	conn = sharedConn{s}
	s.stateRelayed([]byte(`relayed`))
	s.view.followState([]byte(`record`))
	assert.Equal(t, []byte(`relayed`), conn.SharedState())
}

// TestOwnStateOutranksEarlierRelays: a replica that stored a state
// ignores another's state relayed before its own comes back (the cluster
// stored that one first), still answering it; after its own, it applies
// the others' again. One whose own relay never comes stops waiting for it
// after stateSeenWait.
func TestOwnStateOutranksEarlierRelays(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs bytes.Buffer
		c := &stateCluster{}
		s := stateSession(c, &logs)
		conn := sharedConn{s}
		var applied []string
		conn.SetStateUpdate(func(state []byte) { applied = append(applied, string(state)) })

		require.NoError(t, conn.StoreState(context.Background(), []byte(`mine`)))
		s.relay(replication.Relay{Kind: replication.RelayState, From: "b", Data: []byte(`older`)})
		assert.Empty(t, applied, "b's state was stored before this replica's")
		s.relay(replication.Relay{Kind: replication.RelayState, From: "a", Data: []byte(`mine`)}) // this replica's own comes back
		s.relay(replication.Relay{Kind: replication.RelayState, From: "b", Data: []byte(`newer`)})
		assert.Equal(t, []string{"newer"}, applied)
		c.mu.Lock()
		assert.Len(t, c.published, 2, "both of b's states are answered")
		c.mu.Unlock()

		require.NoError(t, conn.StoreState(context.Background(), []byte(`lost`)))
		s.relay(replication.Relay{Kind: replication.RelayState, From: "b", Data: []byte(`meanwhile`)})
		assert.Equal(t, []string{"newer"}, applied)
		time.Sleep(stateSeenWait + time.Millisecond) // its relay is lost
		s.relay(replication.Relay{Kind: replication.RelayState, From: "b", Data: []byte(`later`)})
		assert.Equal(t, []string{"newer", "later"}, applied)
	})
}

// TestDeleteWaitsForReplicas: a shared session's DELETE returns once every
// replica the end reached answered that it dropped its view; without
// answers it gives up after stateSeenWait and says so. A replica the end
// reaches drops its view and answers.
func TestDeleteWaitsForReplicas(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs bytes.Buffer
		c := &stateCluster{others: 2}
		s := stateSession(c, &logs)
		ctx := context.Background()

		deleted := make(chan time.Duration, 1)
		start := time.Now()
		go func() {
			_ = s.h.endShared(ctx, s)
			deleted <- time.Since(start)
		}()
		synctest.Wait() // durably blocked: waiting for the replicas
		s.relay(replication.Relay{Kind: replication.RelayEndSeen, From: "b"})
		s.relay(replication.Relay{Kind: replication.RelayEndSeen, From: "b"}) // the same replica twice counts once
		s.relay(replication.Relay{Kind: replication.RelayEndSeen, From: "a"}) // this replica's own does not count
		synctest.Wait()
		select {
		case <-deleted:
			t.Fatal("the DELETE returned before every replica answered")
		default:
		}
		s.relay(replication.Relay{Kind: replication.RelayEndSeen, From: "c"})
		assert.Zero(t, <-deleted, "returned as the last replica answered")
		assert.Empty(t, logs.String())

		start = time.Now()
		require.NoError(t, s.h.endShared(ctx, s))
		assert.Equal(t, stateSeenWait, time.Since(start), "no answer: it gives up after stateSeenWait")
		assert.Contains(t, logs.String(), "did not confirm its end")
		s.view.mu.Lock()
		assert.Empty(t, s.view.endWait, "every wait was dropped")
		s.view.mu.Unlock()

		other := stateSession(c, &logs)
		other.h.sessions = map[string]*session{other.id: other}
		other.relay(replication.Relay{Kind: replication.RelayEnd, From: "b"})
		assert.Empty(t, other.h.sessions, "the view is dropped")
		require.ErrorIs(t, other.endErr, errDeleted)
		c.mu.Lock()
		defer c.mu.Unlock()
		require.NotEmpty(t, c.published)
		assert.Equal(t, replication.Relay{Kind: replication.RelayEndSeen, From: "a"}, c.published[len(c.published)-1], "and the end is answered")
	})
}

// TestRenewalFindsRecordGone: a view whose renewal finds the session's
// record gone (deleted while this replica missed the end's relay, or
// expired) ends, and the request that looked the session up is refused
// with 404; a renewal that fails otherwise keeps the view, and none is
// tried within a tenth of the idle timeout of the last.
func TestRenewalFindsRecordGone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs bytes.Buffer
		c := &stateCluster{touchErr: fmt.Errorf("streamabletest: %w", ErrUnknownSession)}
		s := stateSession(c, &logs)
		s.h.cfg.idleTimeout = 10 * time.Second
		s.h.sessions = map[string]*session{s.id: s}
		close(s.view.ready)
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil)

		got, _, _ := s.h.lookup(s.id, r)
		assert.Same(t, s, got, "renewed less than a second ago: not asked")
		assert.Zero(t, c.touches)

		time.Sleep(time.Second)
		c.touchErr = errors.New("connection refused")
		got, _, _ = s.h.lookup(s.id, r)
		assert.Same(t, s, got, "the cluster cannot tell: the view stays")
		assert.Equal(t, 1, c.touches)
		assert.Contains(t, logs.String(), "cannot renew")

		time.Sleep(time.Second)
		c.touchErr = fmt.Errorf("streamabletest: %w", ErrUnknownSession)
		got, why, status := s.h.lookup(s.id, r)
		assert.Nil(t, got)
		assert.Equal(t, protocol.RejectUnknownSession, why)
		assert.Equal(t, http.StatusNotFound, status)
		assert.Empty(t, s.h.sessions, "the view is dropped")
		require.ErrorIs(t, s.endErr, errSessionGone)
	})
}
