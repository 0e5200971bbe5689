package accounts_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/gateway/accounts"
)

// newVault returns a vault of store for the AS, reached by hc, with its
// registry.
func newVault(t *testing.T, as *testAS, hc *http.Client, store accounts.Store) (*accounts.Vault, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	v, err := accounts.NewVault(accounts.VaultConfig{
		Store: store, Clients: map[string]accounts.Client{testUpstream: as.client("http://as.test")},
		Registerer: reg, HTTPClient: hc,
	})
	require.NoError(t, err)
	return v, reg
}

// TestVaultRefreshesBeforeExpiry: a token of an hour is served as is
// until less than a tenth of its lifetime is left, then refreshed at the
// token endpoint (with the resource) without the user, and the refresh
// token the AS rotated is the one stored: the next refresh, which the AS
// grants only for it, succeeds too.
func TestVaultRefreshesBeforeExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		as := newTestAS(3600)
		v, reg := newVault(t, as, as.inProcess(), accounts.NewMemoryStore(0))
		ctx := t.Context()
		first := as.authorize()
		saved := time.Now()
		require.NoError(t, v.Save(ctx, "alice", testUpstream, first))

		time.Sleep(53 * time.Minute) // 7 minutes left: not yet
		tok, err := v.Token(ctx, "alice", testUpstream)
		require.NoError(t, err)
		assert.Equal(t, first.AccessToken, tok)
		granted, _ := as.counts()
		assert.Zero(t, granted)

		time.Sleep(2 * time.Minute) // 5 minutes left: refreshed
		second, err := v.Token(ctx, "alice", testUpstream)
		require.NoError(t, err)
		assert.NotEqual(t, first.AccessToken, second)
		granted, _ = as.counts()
		assert.Equal(t, 1, granted)
		again, err := v.Token(ctx, "alice", testUpstream)
		require.NoError(t, err)
		assert.Equal(t, second, again, "the refreshed token is stored")

		time.Sleep(56 * time.Minute) // the first refresh token is spent: the rotated one must serve
		third, err := v.Token(ctx, "alice", testUpstream)
		require.NoError(t, err)
		assert.NotEqual(t, second, third)
		granted, _ = as.counts()
		assert.Equal(t, 2, granted)
		assert.Equal(t, 2, metricValue(t, reg, "mcp_gateway_account_refreshes_total", map[string]string{"upstream": testUpstream}))

		conns, err := v.Connections(ctx, "alice")
		require.NoError(t, err)
		require.Len(t, conns, 1)
		assert.Equal(t, testUpstream, conns[0].Upstream)
		assert.Equal(t, []string{"repo", "read:org"}, conns[0].Scopes)
		assert.True(t, conns[0].Obtained.Equal(saved), "obtained is the authorization's time")
		assert.True(t, conns[0].Expiry.Equal(time.Now().Add(time.Hour)), "expiry is the last refresh's")
	})
}

// TestVaultRefusedRefreshAsksAgain: a refresh the AS refuses
// (invalid_grant) deletes the entry and is ErrAuthorize, without the
// token the AS's description repeated; so is a principal without entry.
func TestVaultRefusedRefreshAsksAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		as := newTestAS(600)
		store := accounts.NewMemoryStore(0)
		v, reg := newVault(t, as, as.inProcess(), store)
		ctx := t.Context()
		tok := as.authorize()
		require.NoError(t, v.Save(ctx, "alice", testUpstream, tok))
		as.mu.Lock()
		clear(as.refresh) // the user revoked the grant at the AS
		as.mu.Unlock()

		time.Sleep(10 * time.Minute)
		_, err := v.Token(ctx, "alice", testUpstream)
		require.ErrorIs(t, err, accounts.ErrAuthorize)
		assert.NotContains(t, err.Error(), tok.RefreshToken)
		assert.NotContains(t, err.Error(), tok.AccessToken)
		data, _, err := store.Get(ctx, "alice", testUpstream)
		require.NoError(t, err)
		assert.Nil(t, data, "the entry is gone")
		assert.Equal(t, 1, metricValue(t, reg, "mcp_gateway_account_refresh_failures_total", map[string]string{"upstream": testUpstream, "reason": "refused"}))
		assert.Equal(t, 0, metricValue(t, reg, "mcp_gateway_account_connections", map[string]string{"upstream": testUpstream}))

		_, err = v.Token(ctx, "alice", testUpstream)
		require.ErrorIs(t, err, accounts.ErrAuthorize, "no entry")
		_, err = v.Token(ctx, "bob", testUpstream)
		require.ErrorIs(t, err, accounts.ErrAuthorize, "no entry")
	})
}

// TestVaultTransientFailureKeepsTheEntry: an AS that answers 503 fails
// the refresh of an expired token with an error that is not ErrAuthorize
// and keeps the entry; a token still valid is served meanwhile; once the
// AS answers, the refresh succeeds.
func TestVaultTransientFailureKeepsTheEntry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		as := newTestAS(600)
		v, reg := newVault(t, as, as.inProcess(), accounts.NewMemoryStore(0))
		ctx := t.Context()
		tok := as.authorize()
		require.NoError(t, v.Save(ctx, "alice", testUpstream, tok))
		as.mu.Lock()
		as.status = http.StatusServiceUnavailable
		as.mu.Unlock()

		time.Sleep(9*time.Minute + 30*time.Second) // in the margin, still valid
		got, err := v.Token(ctx, "alice", testUpstream)
		require.NoError(t, err)
		assert.Equal(t, tok.AccessToken, got, "still valid: served while the AS fails")

		time.Sleep(time.Minute) // expired
		_, err = v.Token(ctx, "alice", testUpstream)
		require.Error(t, err)
		require.NotErrorIs(t, err, accounts.ErrAuthorize)
		assert.Contains(t, err.Error(), "503")
		assert.NotContains(t, err.Error(), tok.RefreshToken)
		assert.Equal(t, 2, metricValue(t, reg, "mcp_gateway_account_refresh_failures_total", map[string]string{"upstream": testUpstream, "reason": "unavailable"}))

		as.mu.Lock()
		as.status = 0
		as.mu.Unlock()
		got, err = v.Token(ctx, "alice", testUpstream)
		require.NoError(t, err)
		assert.NotEqual(t, tok.AccessToken, got)
	})
}

// TestVaultRefreshesOnceForConcurrentCalls: two calls on one vault and
// one on another vault of the same store (two replicas), all after
// expiry, while the AS holds the first refresh: the AS receives one
// refresh, and all three get its token.
func TestVaultRefreshesOnceForConcurrentCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		as := newTestAS(600)
		store := accounts.NewMemoryStore(0)
		v1, _ := newVault(t, as, as.inProcess(), store)
		v2, _ := newVault(t, as, as.inProcess(), store)
		ctx := t.Context()
		require.NoError(t, v1.Save(ctx, "alice", testUpstream, as.authorize()))
		time.Sleep(11 * time.Minute)

		release := as.hold()
		got := make([]string, 3)
		var wg sync.WaitGroup
		for i, v := range []*accounts.Vault{v1, v1, v2} {
			wg.Go(func() {
				tok, err := v.Token(ctx, "alice", testUpstream)
				assert.NoError(t, err)
				got[i] = tok
			})
		}
		synctest.Wait() // all three are waiting: one at the AS, the others for it
		_, entered := as.counts()
		assert.Equal(t, 1, entered, "one refresh at the AS")
		release()
		wg.Wait()
		granted, entered := as.counts()
		assert.Equal(t, 1, granted)
		assert.Equal(t, 1, entered)
		assert.NotEmpty(t, got[0])
		assert.Equal(t, []string{got[0], got[0], got[0]}, got)
	})
}

// TestVaultDisconnectRevokes: Disconnect revokes the refresh token, then
// the access token, at the AS's RFC 7009 endpoint with the client's
// authentication, and removes the entry: the next Token asks again.
func TestVaultDisconnectRevokes(t *testing.T) {
	as := newTestAS(600)
	v, reg := newVault(t, as, as.inProcess(), accounts.NewMemoryStore(0))
	ctx := t.Context()
	tok := as.authorize()
	require.NoError(t, v.Save(ctx, "alice", testUpstream, tok))
	assert.Equal(t, 1, metricValue(t, reg, "mcp_gateway_account_connections", map[string]string{"upstream": testUpstream}))

	require.NoError(t, v.Disconnect(ctx, "alice", testUpstream))
	as.mu.Lock()
	assert.Equal(t, []string{"refresh_token", tok.RefreshToken, "access_token", tok.AccessToken}, as.revoked)
	as.mu.Unlock()
	_, err := v.Token(ctx, "alice", testUpstream)
	require.ErrorIs(t, err, accounts.ErrAuthorize)
	conns, err := v.Connections(ctx, "alice")
	require.NoError(t, err)
	assert.Empty(t, conns)
	assert.Equal(t, 1, metricValue(t, reg, "mcp_gateway_account_revocations_total", map[string]string{"upstream": testUpstream, "outcome": "revoked"}))
	assert.Equal(t, 0, metricValue(t, reg, "mcp_gateway_account_connections", map[string]string{"upstream": testUpstream}))
	require.NoError(t, v.Disconnect(ctx, "alice", testUpstream), "nothing to disconnect is no error")
}

// TestVaultDisconnectWithFailingRevocation: a revocation endpoint that
// fails still leaves the entry removed; the error says so without a
// token.
func TestVaultDisconnectWithFailingRevocation(t *testing.T) {
	as := newTestAS(600)
	c := as.client("http://as.test")
	c.ClientSecret = "wrong" // the AS answers 401
	reg := prometheus.NewRegistry()
	store := accounts.NewMemoryStore(0)
	v, err := accounts.NewVault(accounts.VaultConfig{Store: store, Clients: map[string]accounts.Client{testUpstream: c}, Registerer: reg, HTTPClient: as.inProcess()})
	require.NoError(t, err)
	tok := as.authorize()
	require.NoError(t, v.Save(t.Context(), "alice", testUpstream, tok))
	err = v.Disconnect(t.Context(), "alice", testUpstream)
	require.ErrorContains(t, err, "revocation failed")
	assert.NotContains(t, err.Error(), tok.AccessToken)
	data, _, _ := store.Get(t.Context(), "alice", testUpstream)
	assert.Nil(t, data)
	assert.Equal(t, 1, metricValue(t, reg, "mcp_gateway_account_revocations_total", map[string]string{"upstream": testUpstream, "outcome": "failed"}))
}

// TestVaultBounds: a principal holds at most MaxPerPrincipal
// connections (replacing one is not one more; others are not affected);
// a principal over MaxPrincipalBytes, an empty one and an upstream the
// vault does not know are refused.
func TestVaultBounds(t *testing.T) {
	as := newTestAS(600)
	clients := map[string]accounts.Client{}
	for _, u := range []string{"a", "b", "c"} {
		clients[u] = as.client("http://as.test")
	}
	v, err := accounts.NewVault(accounts.VaultConfig{Store: accounts.NewMemoryStore(0), Clients: clients, MaxPerPrincipal: 2, HTTPClient: as.inProcess()})
	require.NoError(t, err)
	ctx := t.Context()
	require.NoError(t, v.Save(ctx, "alice", "a", as.authorize()))
	require.NoError(t, v.Save(ctx, "alice", "b", as.authorize()))
	require.ErrorContains(t, v.Save(ctx, "alice", "c", as.authorize()), "holds 2 connections already")
	require.NoError(t, v.Save(ctx, "alice", "b", as.authorize()), "replacing is not one more")
	require.NoError(t, v.Save(ctx, "bob", "c", as.authorize()), "bob is not alice")
	require.NoError(t, v.Disconnect(ctx, "alice", "a"))
	require.NoError(t, v.Save(ctx, "alice", "c", as.authorize()), "room again")

	long := strings.Repeat("x", accounts.MaxPrincipalBytes+1)
	require.Error(t, v.Save(ctx, long, "a", as.authorize()))
	_, err = v.Token(ctx, long, "a")
	require.Error(t, err)
	require.NotErrorIs(t, err, accounts.ErrAuthorize)
	require.Error(t, v.Save(ctx, "", "a", as.authorize()))
	require.Error(t, v.Save(ctx, "alice", "nope", as.authorize()))
	_, err = v.Token(ctx, "alice", "nope")
	require.Error(t, err)
	require.NotErrorIs(t, err, accounts.ErrAuthorize)
}

// TestVaultContextCancelled: a caller's cancel ends its wait for a
// refresh, without failing the refresh others wait on.
func TestVaultContextCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		as := newTestAS(600)
		v, _ := newVault(t, as, as.inProcess(), accounts.NewMemoryStore(0))
		require.NoError(t, v.Save(t.Context(), "alice", testUpstream, as.authorize()))
		time.Sleep(11 * time.Minute)
		release := as.hold()
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() {
			_, err := v.Token(ctx, "alice", testUpstream)
			done <- err
		}()
		synctest.Wait()
		cancel()
		require.ErrorIs(t, <-done, context.Canceled)
		release()
		tok, err := v.Token(t.Context(), "alice", testUpstream)
		require.NoError(t, err)
		assert.NotEmpty(t, tok)
		granted, _ := as.counts()
		assert.Equal(t, 1, granted, "the refresh the cancelled caller started finished for the next")
	})
}

// TestVaultRefreshGoesOnlyWhereTheTokenCameFrom: an entry obtained at
// one token endpoint is never refreshed at another (the upstream's
// client changed: a mix-up between authorization servers): it is
// dropped, ErrAuthorize, and the other endpoint receives nothing; an
// expired entry without a refresh token is ErrAuthorize too.
func TestVaultRefreshGoesOnlyWhereTheTokenCameFrom(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		as, other := newTestAS(600), newTestAS(600)
		store := accounts.NewMemoryStore(0)
		v1, _ := newVault(t, as, as.inProcess(), store)
		c := other.client("http://other.test")
		v2, err := accounts.NewVault(accounts.VaultConfig{Store: store, Clients: map[string]accounts.Client{testUpstream: c}, HTTPClient: other.inProcess()})
		require.NoError(t, err)
		ctx := t.Context()
		require.NoError(t, v1.Save(ctx, "alice", testUpstream, as.authorize()))
		noRefresh := as.authorize()
		noRefresh.RefreshToken = ""
		require.NoError(t, v1.Save(ctx, "bob", testUpstream, noRefresh))
		time.Sleep(11 * time.Minute)

		_, err = v2.Token(ctx, "alice", testUpstream)
		require.ErrorIs(t, err, accounts.ErrAuthorize)
		_, entered := other.counts()
		assert.Zero(t, entered, "the other endpoint got no refresh token")
		_, entered = as.counts()
		assert.Zero(t, entered)
		data, _, _ := store.Get(ctx, "alice", testUpstream)
		assert.Nil(t, data)

		_, err = v1.Token(ctx, "bob", testUpstream)
		require.ErrorIs(t, err, accounts.ErrAuthorize)
		data, _, _ = store.Get(ctx, "bob", testUpstream)
		assert.Nil(t, data)
	})
}

// TestVaultNewAuthorizationDuringARefusedRefresh: the user authorizes
// again while the refresh of the old grant is being refused: the new
// entry stays and serves the call, rather than being deleted.
func TestVaultNewAuthorizationDuringARefusedRefresh(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		as := newTestAS(600)
		store := accounts.NewMemoryStore(0)
		v, _ := newVault(t, as, as.inProcess(), store)
		ctx := t.Context()
		require.NoError(t, v.Save(ctx, "alice", testUpstream, as.authorize()))
		time.Sleep(11 * time.Minute)
		as.mu.Lock()
		clear(as.refresh)
		as.mu.Unlock()
		release := as.hold()
		done := make(chan string, 1)
		go func() {
			tok, err := v.Token(ctx, "alice", testUpstream)
			assert.NoError(t, err)
			done <- tok
		}()
		synctest.Wait() // the refresh is at the AS
		fresh := as.authorize()
		require.NoError(t, v.Save(ctx, "alice", testUpstream, fresh))
		release()
		assert.Equal(t, fresh.AccessToken, <-done)
		data, _, _ := store.Get(ctx, "alice", testUpstream)
		assert.NotNil(t, data, "the new authorization stays")
	})
}
