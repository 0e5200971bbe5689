package flagvalue_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/cmd/internal/flagvalue"
)

// TestURLHasPassword: a password is found in every form of -redis's URL,
// Sentinel's and Cluster's lists of hosts included, and in every
// parameter that names one, however cased or escaped; a user alone, an @
// past the hosts, or a fragment is none.
func TestURLHasPassword(t *testing.T) {
	for raw, want := range map[string]bool{
		"redis://:pw@redis:6379/2":                           true,
		"rediss://vigil:pw@redis:6379":                       true,
		"rediss+sentinel://vigil:pw@s1,s2:26379,s3/mymaster": true,
		"rediss+cluster://u:p@n1:6379,n2":                    true,
		"rediss://vigil@redis:6379/0":                        false,
		"redis://redis:6379/0?x=a:b@c":                       false,
		"redis+sentinel://127.0.0.1:1/mymaster?password=X":   true,
		"redis+sentinel://s1/m?sentinel_password=X":          true,
		"rediss://h:6379/0?pool_size=3&Pass%77ord=X":         true,
		"redis://h/0?client_name=a&PASSWORD=":                true,
		"rediss+cluster://n1?auth_token=X#f":                 true,
		"rediss://h:6379/0?pool_size=3#password=X":           false,
		"rediss+sentinel://s1/m?sentinel_user=watch&db=2":    false,
		"not a url": false,
	} {
		assert.Equal(t, want, flagvalue.URLHasPassword(raw), raw)
	}
}

// TestSecret: @FILE reads the file, its one line end cut; env:VAR the
// variable; anything else is the value; an empty secret is an error that
// names where it looked.
func TestSecret(t *testing.T) {
	file := filepath.Join(t.TempDir(), "s")
	require.NoError(t, os.WriteFile(file, []byte("s3cr3t\r\n"), 0o600))
	getenv := func(k string) string { return map[string]string{"K": "v"}[k] }
	v, err := flagvalue.Secret("@"+file, getenv)
	require.NoError(t, err)
	assert.Equal(t, "s3cr3t", v)
	v, err = flagvalue.Secret("env:K", getenv)
	require.NoError(t, err)
	assert.Equal(t, "v", v)
	v, err = flagvalue.Secret("plain", getenv)
	require.NoError(t, err)
	assert.Equal(t, "plain", v)
	_, err = flagvalue.Secret("env:NOPE", getenv)
	require.EqualError(t, err, "the variable NOPE is empty or not set")
}

// TestToolRates: a burst is optional, a rate over MaxRate is refused.
func TestToolRates(t *testing.T) {
	m, err := flagvalue.ToolRates("-f", "a=2/3, b=0.5")
	require.NoError(t, err)
	assert.Equal(t, map[string]flagvalue.ToolRate{"a": {Rate: 2, Burst: 3}, "b": {Rate: 0.5}}, m)
	_, err = flagvalue.ToolRates("-f", "a=2e9")
	require.ErrorContains(t, err, `-f: "a=2e9": the rate must be a number above 0 and at most 1e+09`)
}

// TestHiddenRates: a rate limit on a tool that needs scopes is refused,
// naming every such tool, sorted; limits on tools that need none pass.
func TestHiddenRates(t *testing.T) {
	t.Parallel()
	scopes := map[string][]string{"sleep": {"s"}, "echo": {"e"}}
	require.NoError(t, flagvalue.HiddenRates(map[string]flagvalue.ToolRate{"countdown": {Rate: 2}}, scopes))
	err := flagvalue.HiddenRates(map[string]flagvalue.ToolRate{"sleep": {Rate: 1}, "echo": {Rate: 5}, "countdown": {Rate: 2}}, scopes)
	require.ErrorContains(t, err, `-tool-rate-limits on ["echo" "sleep"], which need -auth-tool-scopes`)
}
