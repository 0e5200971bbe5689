package accounts_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/gateway/accounts"
	"github.com/vigil-mcp/vigil/internal/testkit/redistest"
	"github.com/vigil-mcp/vigil/redisshare"
)

// clock is a shared clock the test moves forward.
type clock struct{ offset atomic.Int64 }

func (c *clock) now() time.Time          { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *clock) advance(d time.Duration) { c.offset.Add(int64(d)) }

// watchedStore signals busy (without blocking) each time TryLock finds
// the lease held: its vault then waits for another replica's refresh.
type watchedStore struct {
	accounts.Store
	busy chan struct{}
}

func (w watchedStore) TryLock(ctx context.Context, principal, upstream string, ttl time.Duration) (string, bool, error) {
	lease, ok, err := w.Store.TryLock(ctx, principal, upstream, ttl)
	if err == nil && !ok {
		select {
		case w.busy <- struct{}{}:
		default:
		}
	}
	return lease, ok, err
}

// TestVaultThreeReplicasOnRedis: three vaults on three replicas sharing
// one redis-server. Alice's authorization saved on replica 1 serves her
// calls on replicas 2 and 3; after expiry, concurrent calls on all three
// (held until the two that lost the lease wait for the third's refresh)
// cause exactly one refresh at the AS, and all three get its token. What
// Redis holds has no token, nor alice's name, in clear.
func TestVaultThreeReplicasOnRedis(t *testing.T) {
	rs := redistest.Start(t)
	as := newTestAS(600)
	as.onEnter = make(chan struct{}, 4)
	srv := httptest.NewServer(as)
	defer srv.Close()
	hc := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
	defer hc.CloseIdleConnections()
	var clk clock

	vaults := make([]*accounts.Vault, 3)
	busy := make([]chan struct{}, 3)
	for i := range vaults {
		s, err := redisshare.Open(t.Context(), redisshare.Config{URL: rs.URL(), ClusterKey: redistest.ClusterKey()})
		require.NoError(t, err)
		defer func() { assert.NoError(t, s.Close()) }()
		busy[i] = make(chan struct{}, 1)
		vaults[i], err = accounts.NewVault(accounts.VaultConfig{
			Store: watchedStore{s.AccountStore(), busy[i]}, Clients: map[string]accounts.Client{testUpstream: as.client(srv.URL)},
			HTTPClient: hc, Now: clk.now,
		})
		require.NoError(t, err)
	}
	ctx := t.Context()
	first := as.authorize()
	require.NoError(t, vaults[0].Save(ctx, "alice", testUpstream, first))
	for _, v := range vaults[1:] {
		tok, err := v.Token(ctx, "alice", testUpstream)
		require.NoError(t, err)
		assert.Equal(t, first.AccessToken, tok, "any replica serves alice's token")
	}
	_, err := vaults[2].Token(ctx, "bob", testUpstream)
	require.ErrorIs(t, err, accounts.ErrAuthorize, "bob has not authorized")

	clk.advance(11 * time.Minute) // expired
	release := as.hold()
	got := make([]string, 3)
	var wg sync.WaitGroup
	for i, v := range vaults {
		wg.Go(func() {
			tok, err := v.Token(ctx, "alice", testUpstream)
			assert.NoError(t, err)
			got[i] = tok
		})
	}
	// The barrier: one refresh at the AS, and the two other replicas
	// found the lease held.
	timeout := time.After(10 * time.Second)
	select {
	case <-as.onEnter:
	case <-timeout:
		t.Fatal("no refresh reached the AS")
	}
	waiting := map[int]bool{}
	for len(waiting) < 2 {
		select {
		case <-busy[0]:
			waiting[0] = true
		case <-busy[1]:
			waiting[1] = true
		case <-busy[2]:
			waiting[2] = true
		case <-timeout:
			t.Fatalf("only replicas %v waited for the refresh", waiting)
		}
	}
	release()
	wg.Wait()
	granted, entered := as.counts()
	assert.Equal(t, 1, entered, "one refresh request at the AS")
	assert.Equal(t, 1, granted)
	assert.NotEqual(t, first.AccessToken, got[0])
	assert.Equal(t, []string{got[0], got[0], got[0]}, got)

	admin := rs.Client(t)
	keys, err := admin.Keys(ctx, "*").Result()
	require.NoError(t, err)
	var held strings.Builder
	for _, k := range keys {
		held.WriteString(k + "\n")
		switch admin.Type(ctx, k).Val() {
		case "string":
			held.WriteString(admin.Get(ctx, k).Val() + "\n")
		case "set":
			held.WriteString(strings.Join(admin.SMembers(ctx, k).Val(), "\n"))
		case "hash":
			for f, v := range admin.HGetAll(ctx, k).Val() {
				held.WriteString(f + "\n" + v + "\n")
			}
		}
	}
	require.Contains(t, held.String(), "vigil:accounts:")
	as.mu.Lock()
	defer as.mu.Unlock()
	for _, tok := range append(as.issued, "alice") {
		assert.NotContains(t, held.String(), tok)
	}
}
