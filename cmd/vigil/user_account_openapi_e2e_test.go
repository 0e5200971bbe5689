package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestUserAccountOpenAPI is the issue-78 rig with a REST API for
// upstream: vigil -upstream 'u=openapi:FILE' -upstream-auth
// 'u=user,...,issuer=AS,resource=API': alice is asked to connect her
// account, then her calls reach the API with her own token; a token the
// API refuses (401) is renewed once, on the same call; when the renewed
// one is refused too, the call asks her to connect again.
func TestUserAccountOpenAPI(t *testing.T) {
	port := authResource(t)
	base := strings.TrimSuffix(port.resource, "/mcp")
	r := startUserParties(t, base, port.resource, 0)
	spec := filepath.Join(t.TempDir(), "who.yaml")
	require.NoError(t, os.WriteFile(spec, []byte(`openapi: 3.0.3
info: {title: who, version: "1"}
servers: [{url: "`+r.up.url+`/rest"}]
components:
  securitySchemes:
    account: {type: oauth2, flows: {authorizationCode: {authorizationUrl: "`+r.as.Issuer()+`/auth", tokenUrl: "`+r.as.Issuer()+`/token", scopes: {vigil.read: read}}}}
security: [{account: [vigil.read]}]
paths:
  /whoami:
    get:
      operationId: whoami
      responses: {"200": {description: the caller's subject}}
`), 0o600))
	r.v = startVigilAuth(t, port, r.idp.Issuer(), r.env(),
		"-upstream", "u=openapi:"+spec,
		"-upstream-auth", "u=user,client_id="+userGatewayClient+",client_secret=@"+r.secretFile+",scopes=vigil.read,issuer="+r.as.Issuer()+",resource="+r.up.url,
		"-connect-client-id", userSignInClient, "-connect-client-secret", "env:CONNECT_SECRET")
	alice := r.token(t, userAccounts[0])
	ca := r.v.session(t, alice)
	r.connect(t, asked(t, call2025(t, ca, "whoami", nil)), "alice")
	require.Equal(t, "subject=alice", resultText(t, call2025(t, ca, "whoami", nil)))
	assert.Equal(t, "subject=alice", resultText(t, r.call2026(t, alice, "whoami", `{}`)), "2026-07-28 too")
	refreshes := func() int64 {
		return scrapeSum(t, strings.TrimPrefix(r.base, "http://"), "mcp_gateway_account_refreshes_total")
	}
	require.Zero(t, refreshes())

	refused := r.lastToken(t)
	r.up.refuse(refused)
	assert.Equal(t, "subject=alice", resultText(t, call2025(t, ca, "whoami", nil)), "the same call, renewed")
	assert.Equal(t, int64(1), refreshes(), "one refresh")
	assert.NotEqual(t, refused, r.lastToken(t), "the renewed token")

	r.up.closed.Store(true) // it refuses every token of hers
	m := call2025(t, ca, "whoami", nil)
	require.NotNil(t, m.Error, "%s", m.Result)
	r.up.closed.Store(false)
	r.connect(t, asked(t, m), "alice") // the renewed token refused too: forgotten, asked on the same call
	assert.Equal(t, int64(2), refreshes(), "one refresh more, no more")
	assert.Equal(t, "subject=alice", resultText(t, call2025(t, ca, "whoami", nil)), "served once connected again")
	assert.NotContains(t, r.v.logs.String(), r.lastToken(t), "her token is not logged")
}
