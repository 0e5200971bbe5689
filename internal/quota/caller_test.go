package quota_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/vigil-mcp/vigil/internal/quota"
)

// User cuts the client off a principal key, so that the clients of one
// user are one caller, and no choice of parts makes two users one; a key
// of another form is its own user.
func TestUser(t *testing.T) {
	alice := quota.User(quota.PrincipalKey("https://as", "alice", "client-1"))
	assert.Equal(t, alice, quota.User(quota.PrincipalKey("https://as", "alice", "client-2")))
	assert.Equal(t, alice, quota.User(quota.PrincipalKey("https://as", "alice", "")))
	assert.NotEqual(t, alice, quota.User(quota.PrincipalKey("https://as", "alice ", "client-1")))
	assert.NotEqual(t, alice, quota.User(quota.PrincipalKey("https://as", "alic", "e client-1")))
	assert.NotEqual(t, alice, quota.User(quota.PrincipalKey("https://as2", "alice", "client-1")))
	assert.NotEqual(t, quota.User(quota.PrincipalKey("a", "b c", "")), quota.User(quota.PrincipalKey("a", "b", "c")))
	for _, k := range []string{"", "alice", ":", "5:ab", "2:ab", "2:ab 9:c", "x:ab 1:c d", "-1:ab 1:c d", "99999999999999999999:a 1:b c"} {
		assert.Equal(t, k, quota.User(k), "%q", k)
	}
	allocs := testing.AllocsPerRun(100, func() { _ = quota.User("10:https://as 5:alice client-1") })
	assert.Zero(t, allocs)
}

// Addr counts an IPv4 client by its address, an IPv4-mapped one as IPv4,
// an IPv6 one by its network; anything else is bounded.
func TestAddr(t *testing.T) {
	for _, c := range []struct {
		host string
		bits int
		want string
	}{
		{"192.0.2.1", 64, "192.0.2.1"},
		{"::ffff:192.0.2.1", 64, "192.0.2.1"},
		{"2001:db8:1:2:3:4:5:6", 64, "2001:db8:1:2::/64"},
		{"2001:db8:1:2::9", 64, "2001:db8:1:2::/64"},
		{"fe80::1%eth0", 64, "fe80::/64"},
		{"2001:db8:1:2:3:4:5:6", 128, "2001:db8:1:2:3:4:5:6/128"},
		{"2001:db8:1:2:3:4:5:6", 48, "2001:db8:1::/48"},
		{"not:an:address", 64, "not:an:address"},
		{strings.Repeat("x", 100), 64, strings.Repeat("x", 64)},
	} {
		assert.Equal(t, c.want, quota.Addr(c.host, c.bits), "%s /%d", c.host, c.bits)
	}
	assert.Equal(t, "2001:db8:1:2::/64", quota.RemoteAddr("[2001:db8:1:2::9]:443", 64))
	assert.Equal(t, "192.0.2.1", quota.RemoteAddr("192.0.2.1:443", 64))
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = quota.RemoteAddr("192.0.2.1:443", 64) }), "IPv4 allocates nothing")
}

// CallerAddr prefers the key of the request's connection to its own.
func TestCallerAddr(t *testing.T) {
	ctx := quota.ContextWithAddr(context.Background(), "2001:db8::/56")
	assert.Equal(t, "2001:db8::/56", quota.CallerAddr(ctx, "[2001:db8::1]:443"))
	assert.Equal(t, "2001:db8::/64", quota.CallerAddr(context.Background(), "[2001:db8::1]:443"))
}
