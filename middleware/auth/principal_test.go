package auth_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/vigil-mcp/vigil/middleware/auth"
)

// A principal's key is its issuer, subject and client: a refreshed token
// keeps it; another client of the same user, another issuer, or parts
// chosen to run into each other do not.
func TestPrincipalKey(t *testing.T) {
	t.Parallel()
	p := auth.Principal{Issuer: "https://as", Subject: "alice", ClientID: "app"}
	refreshed := p
	refreshed.Scopes = []string{"more"}
	assert.Equal(t, p.Key(), refreshed.Key())
	for _, other := range []auth.Principal{
		{Issuer: "https://as", Subject: "alice", ClientID: "other-app"},
		{Issuer: "https://as2", Subject: "alice", ClientID: "app"},
		{Issuer: "https://as", Subject: "alice app", ClientID: ""},
		{Issuer: "https://as alice", Subject: "", ClientID: "app"},
		{Issuer: "https://as", Subject: "app", ClientID: "app"},
	} {
		assert.NotEqual(t, p.Key(), other.Key(), "%+v", other)
	}
}
