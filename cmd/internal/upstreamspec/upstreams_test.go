package upstreamspec

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestParseOpenAPI checks -upstream NAME=openapi:FILE: the file's bytes
// become the upstream's description, -upstream-header and -upstream-auth
// apply to it (user mode with issuer= only), and a URL, a missing or
// empty file and -upstream-env are refused, each saying why.
func TestParseOpenAPI(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "pets.json")
	require.NoError(t, os.WriteFile(spec, []byte(`{"openapi":"3.1.0"}`), 0o600))
	empty := filepath.Join(dir, "empty.json")
	require.NoError(t, os.WriteFile(empty, nil, 0o600))

	ups, err := Parse([]string{"pets=openapi:" + spec}, nil)
	require.NoError(t, err)
	require.Len(t, ups, 1)
	assert.JSONEq(t, `{"openapi":"3.1.0"}`, string(ups[0].OpenAPI))
	assert.Empty(t, ups[0].URL)
	assert.Empty(t, ups[0].Command)
	_, err = ParseCredentials(ups, []string{"pets=X-Api-Key=k"}, nil, func(string) string { return "" })
	require.NoError(t, err)
	assert.Equal(t, "k", ups[0].Header.Get("X-Api-Key"))
	auths, err := ParseCredentials(ups, nil, []string{"pets=client_credentials,token_url=https://as.example/token,client_id=a,client_secret=env:S"}, func(string) string { return "s" })
	require.NoError(t, err)
	assert.Equal(t, ClientCredentials, auths["pets"].Mode)
	_, err = ParseCredentials(ups, nil, []string{"pets=user,client_id=a,client_secret=env:S"}, func(string) string { return "s" })
	require.ErrorContains(t, err, "an OpenAPI upstream's user mode needs issuer=")
	auths, err = ParseCredentials(ups, nil, []string{"pets=user,client_id=a,client_secret=env:S,issuer=https://github.example"}, func(string) string { return "s" })
	require.NoError(t, err)
	assert.Equal(t, "https://github.example", auths["pets"].Issuer)

	for target, want := range map[string]string{
		"openapi:https://x.example/openapi.json": "a URL is not fetched yet",
		"openapi:" + filepath.Join(dir, "none"):  "no such file",
		"openapi:" + empty:                       "is empty",
	} {
		_, err := Parse([]string{"pets=" + target}, nil)
		require.ErrorContains(t, err, want, "%s", target)
	}
	_, err = Parse([]string{"pets=openapi:" + spec}, []string{"pets=K=V"})
	require.ErrorContains(t, err, "has no environment")
}
