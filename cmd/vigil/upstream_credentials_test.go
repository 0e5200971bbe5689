package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/cmd/internal/upstreamspec"
)

// TestUpstreamCredentialFlags: -upstream-header reads a secret from a
// file or a variable, -upstream-auth takes client_credentials or
// token_exchange, -upstream-tools the patterns; what is wrong is refused,
// and no error holds a secret.
func TestUpstreamCredentialFlags(t *testing.T) {
	const secret = "s3cr3t-9f2a"
	file := filepath.Join(t.TempDir(), "key")
	require.NoError(t, os.WriteFile(file, []byte(secret+"\n"), 0o600))
	env := map[string]string{"UP_KEY": secret}
	parse := func(args ...string) (config, error) {
		return parseConfig(args, func(k string) string { return env[k] }, io.Discard)
	}
	cfg, err := parse("-upstream", "u=http://127.0.0.1:9/mcp", "-upstream", "s=cat",
		"-upstream-header", "u=X-Api-Key=@"+file, "-upstream-header", "u=X-Other=env:UP_KEY", "-upstream-header", "u=X-Tenant=blue",
		"-upstream-auth", "u=client_credentials,token_url=http://127.0.0.1:9/token,client_id=gw,client_secret=@"+file+",scopes=a b,resource=http://127.0.0.1:9/mcp",
		"-upstream-tools", "s=read_*,!read_secret")
	require.NoError(t, err)
	assert.Equal(t, http.Header{"X-Api-Key": {secret}, "X-Other": {secret}, "X-Tenant": {"blue"}}, cfg.upstreams[0].Header)
	assert.Equal(t, upstreamspec.Auth{
		Mode: upstreamspec.ClientCredentials, TokenURL: "http://127.0.0.1:9/token", ClientID: "gw", Secret: secret,
		Resource: "http://127.0.0.1:9/mcp", Scopes: []string{"a", "b"},
	}, cfg.upstreamAuth["u"])
	assert.Equal(t, []string{"read_*", "!read_secret"}, cfg.upstreams[1].Tools)

	cfg, err = parse("-upstream", "u=http://127.0.0.1:9/mcp", "-auth-issuer", "https://idp.example",
		"-upstream-auth", "u=user,client_id=gw,client_secret=env:UP_KEY,scopes=repo",
		"-connect-client-id", "vigil", "-connect-client-secret", "@"+file)
	require.NoError(t, err)
	assert.Equal(t, upstreamspec.Auth{
		Mode: upstreamspec.User, ClientID: "gw", Secret: secret, Resource: "http://127.0.0.1:9/mcp", Scopes: []string{"repo"},
	}, cfg.upstreamAuth["u"], "the upstream's URL is the resource by default")
	assert.Equal(t, secret, cfg.connect.Secret)
	user := []string{"-upstream-auth", "u=user,client_id=gw,client_secret=env:UP_KEY"}

	for _, tc := range []struct {
		args    []string
		wantErr string
	}{
		{[]string{"-upstream-header", "x=A=b"}, "-upstream-header x: no -upstream x"},
		{[]string{"-upstream-header", "s=A=b"}, "only an HTTP upstream takes credentials"},
		{[]string{"-upstream-header", "u=Bad Name=b"}, "want NAME=Header-Name=VALUE"},
		{[]string{"-upstream-header", "u=A=@/nonexistent/key"}, "/nonexistent/key"},
		{[]string{"-upstream-header", "u=A=env:NOPE"}, "the variable NOPE is empty or not set"},
		{[]string{"-upstream-auth", "u=client_credentials,token_url=http://127.0.0.1:9/token,client_id=gw,client_secret=" + secret}, "give @FILE or env:VAR, not the secret itself"},
		{[]string{"-upstream-auth", "u=client_credentials,client_id=gw,client_secret=env:UP_KEY"}, "needs token_url="},
		{[]string{"-upstream-auth", "u=token_exchange,audience=http://127.0.0.1:9/mcp"}, "token_exchange needs -auth-exchange-endpoint"},
		{[]string{"-upstream-auth", "u=token_exchange"}, "token_exchange needs audience="},
		{[]string{"-upstream-auth", "u=magic"}, `mode "magic"`},
		{[]string{"-upstream-auth", "u=client_credentials,color=red"}, `unknown key "color"`},
		{[]string{"-upstream-tools", "x=a*"}, "for an -upstream NAME"},
		{[]string{"-upstream-auth", "u=user,client_id=gw"}, "user needs client_id= and client_secret="},
		{[]string{"-upstream-auth", "u=user,client_id=gw,client_secret=" + secret}, "give @FILE or env:VAR, not the secret itself"},
		{[]string{"-upstream-auth", "u=user,client_id=gw,client_secret=env:UP_KEY,issuer=ftp://x"}, "issuer:"},
		{user, "needs -auth-issuer"},
		{append([]string{"-auth-issuer", "https://idp.example"}, user...), "needs -connect-client-id and -connect-client-secret"},
		{append([]string{"-auth-issuer", "https://idp.example", "-connect-client-id", "v", "-connect-client-secret", secret}, user...), "-connect-client-secret: give @FILE or env:VAR"},
		{[]string{"-connect-client-id", "v"}, "need an -upstream-auth NAME=user"},
	} {
		_, err := parse(append([]string{"-upstream", "u=http://127.0.0.1:9/mcp", "-upstream", "s=cat"}, tc.args...)...)
		require.ErrorContains(t, err, tc.wantErr, "%v", tc.args)
		assert.NotContains(t, err.Error(), secret)
	}
}
