package accounts_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/gateway/accounts"
)

// TestVaultDisconnectRefreshOnly: an AS that revokes the refresh token
// but answers unsupported_token_type for the access token (a JWT, as
// oidc-provider does) leaves a disconnection said as it is: the entry is
// gone, an *AccessTokenLivesError names when the last access token
// expires, and the revocation is counted refresh_only, not revoked.
func TestVaultDisconnectRefreshOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		as := newTestAS(600)
		as.jwtAccess = true
		v, reg := newVault(t, as, as.inProcess(), accounts.NewMemoryStore(0))
		ctx := t.Context()
		tok := as.authorize()
		require.NoError(t, v.Save(ctx, "alice", testUpstream, tok))
		expiry := time.Now().Add(600 * time.Second)

		err := v.Disconnect(ctx, "alice", testUpstream)
		var lives *accounts.AccessTokenLivesError
		require.ErrorAs(t, err, &lives)
		assert.True(t, lives.Expiry.Equal(expiry), "%v", lives.Expiry)
		assert.Equal(t, testUpstream, lives.Upstream)
		assert.Contains(t, err.Error(), "refresh token revoked")
		assert.Contains(t, err.Error(), "unsupported_token_type")
		assert.Contains(t, err.Error(), expiry.UTC().Format(time.RFC3339))
		assert.NotContains(t, err.Error(), tok.AccessToken)
		_, err = v.Token(ctx, "alice", testUpstream)
		require.ErrorIs(t, err, accounts.ErrAuthorize, "the entry is gone")
		assert.Equal(t, 1, metricValue(t, reg, "mcp_gateway_account_revocations_total", map[string]string{"upstream": testUpstream, "outcome": "refresh_only"}))
		assert.Equal(t, 0, metricValue(t, reg, "mcp_gateway_account_revocations_total", map[string]string{"upstream": testUpstream, "outcome": "revoked"}))
	})
}
