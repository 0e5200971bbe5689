package accounts_test

import (
	"net/http"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/gateway/accounts"
)

// TestVaultRenewsARefusedToken: an upstream refused alice's access token
// long before its expiry. Renew refreshes it at once and stores the
// rotated tokens; a Renew of the token refused, after that, returns the
// renewed one without another refresh. When the user revoked the grant
// at the AS, Renew is ErrAuthorize and the entry is gone; an AS that
// fails is a transient error that never returns the refused token.
func TestVaultRenewsARefusedToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		as := newTestAS(3600)
		store := accounts.NewMemoryStore(0)
		v, reg := newVault(t, as, as.inProcess(), store)
		ctx := t.Context()
		first := as.authorize()
		require.NoError(t, v.Save(ctx, "alice", testUpstream, first))

		renewed, err := v.Renew(ctx, "alice", testUpstream, "")
		require.NoError(t, err)
		assert.NotEqual(t, first.AccessToken, renewed)
		granted, _ := as.counts()
		assert.Equal(t, 1, granted, "refreshed an hour before its expiry")
		got, err := v.Token(ctx, "alice", testUpstream)
		require.NoError(t, err)
		assert.Equal(t, renewed, got, "stored")
		again, err := v.Renew(ctx, "alice", testUpstream, first.AccessToken)
		require.NoError(t, err)
		assert.Equal(t, renewed, again, "renewed already: the entry's token")
		granted, _ = as.counts()
		assert.Equal(t, 1, granted, "no second refresh")

		as.mu.Lock()
		as.status = http.StatusServiceUnavailable
		as.mu.Unlock()
		_, err = v.Renew(ctx, "alice", testUpstream, renewed)
		require.Error(t, err, "the refused token is not served while the AS fails")
		require.NotErrorIs(t, err, accounts.ErrAuthorize)
		assert.NotContains(t, err.Error(), renewed)

		as.mu.Lock()
		as.status = 0
		clear(as.refresh) // the user revoked the grant at the AS
		as.mu.Unlock()
		_, err = v.Renew(ctx, "alice", testUpstream, "")
		require.ErrorIs(t, err, accounts.ErrAuthorize)
		data, _, err := store.Get(ctx, "alice", testUpstream)
		require.NoError(t, err)
		assert.Nil(t, data, "the entry is gone")
		assert.Equal(t, 1, metricValue(t, reg, "mcp_gateway_account_refresh_failures_total", map[string]string{"upstream": testUpstream, "reason": "refused"}))
		_, err = v.Renew(ctx, "alice", testUpstream, "")
		require.ErrorIs(t, err, accounts.ErrAuthorize, "no entry")
	})
}

// TestVaultRenewsOnceForConcurrentRefusals: three calls whose token the
// upstream refused renew it while the AS holds the refresh: the AS
// receives one refresh, and all three get its token.
func TestVaultRenewsOnceForConcurrentRefusals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		as := newTestAS(3600)
		v, _ := newVault(t, as, as.inProcess(), accounts.NewMemoryStore(0))
		ctx := t.Context()
		first := as.authorize()
		require.NoError(t, v.Save(ctx, "alice", testUpstream, first))
		release := as.hold()
		var wg sync.WaitGroup
		got := make([]string, 3)
		for i := range got {
			wg.Go(func() {
				tok, err := v.Renew(ctx, "alice", testUpstream, first.AccessToken)
				assert.NoError(t, err)
				got[i] = tok
			})
		}
		synctest.Wait() // all three wait on the one refresh the AS holds
		_, entered := as.counts()
		assert.Equal(t, 1, entered)
		release()
		wg.Wait()
		assert.NotEqual(t, first.AccessToken, got[0])
		assert.Equal(t, []string{got[0], got[0], got[0]}, got)
	})
}

// TestVaultForget: Forget removes the entry without revoking its tokens,
// and the principal must authorize again; no entry is no error.
func TestVaultForget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		as := newTestAS(3600)
		v, reg := newVault(t, as, as.inProcess(), accounts.NewMemoryStore(0))
		ctx := t.Context()
		require.NoError(t, v.Save(ctx, "alice", testUpstream, as.authorize()))
		require.NoError(t, v.Forget(ctx, "alice", testUpstream))
		_, err := v.Token(ctx, "alice", testUpstream)
		require.ErrorIs(t, err, accounts.ErrAuthorize)
		as.mu.Lock()
		assert.Empty(t, as.revoked, "nothing revoked")
		as.mu.Unlock()
		assert.Equal(t, 0, metricValue(t, reg, "mcp_gateway_account_connections", map[string]string{"upstream": testUpstream}))
		require.NoError(t, v.Forget(ctx, "alice", testUpstream), "no entry")
	})
}
