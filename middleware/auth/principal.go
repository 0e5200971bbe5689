package auth

import (
	"context"
	"slices"
	"time"

	"github.com/vigil-mcp/vigil/internal/quota"
)

// Principal is who a verified token speaks for. Handlers read it with
// [PrincipalFromContext]; it holds no token, so that nothing can pass a client's
// token on to another service (an upstream call needs its own token).
type Principal struct {
	Subject  string    // the token's sub
	Issuer   string    // the token's iss
	ClientID string    // the OAuth client the token was issued to (client_id, or azp)
	Scopes   []string  // the token's scopes, from scope (space-separated) or scp
	Expiry   time.Time // the token's exp
	// KeyThumbprint is the RFC 7638 thumbprint of the key the token is
	// bound to (its cnf.jkt, RFC 9449 DPoP); "" for a token bound to none.
	// The oauth resource server accepts a bound token only with a DPoP
	// proof signed by that key.
	KeyThumbprint string
	// Claims holds the claims the verifier was told to keep (see the
	// verifiers' Claims setting), by name; nil when none.
	Claims map[string]any
	// Actors are the subjects of the token's act chain (RFC 8693 §4.1),
	// outermost first: Actors[0] is the party acting now on behalf of
	// Subject, each next one the party it acts for in turn. Nil when the
	// token speaks for Subject directly. Key does not include them.
	Actors []string

	key string // Key's value, computed once by Seal
}

// HasScopes reports whether p holds every one of scopes.
func (p *Principal) HasScopes(scopes ...string) bool {
	for _, s := range scopes {
		if !slices.Contains(p.Scopes, s) {
			return false
		}
	}
	return true
}

// Missing returns the scopes of want that p lacks, in want's order; nil when
// p has them all.
func (p *Principal) Missing(want []string) []string {
	var missing []string
	for _, s := range want {
		if !slices.Contains(p.Scopes, s) {
			missing = append(missing, s)
		}
	}
	return missing
}

// Key identifies the principal across its tokens: issuer, subject and
// client. A refreshed token of the same user through the same client has
// the same key; the same user through another client (a token that may
// hold other scopes) does not, nor does a client whose id happens to equal
// some user's subject. Sessions and tasks are bound to it. The quotas
// count its issuer and subject only, whatever the client: one user's
// clients share the user's quotas.
func (p *Principal) Key() string {
	if p.key != "" {
		return p.key
	}
	return principalKeyOf(p)
}

// Seal computes Key once, for a principal a verifier is about to hand out
// and cache: sessions compare it on every request, and an unsealed
// principal computes it on every call. Issuer, Subject and ClientID must
// not change afterwards.
func (p *Principal) Seal() { p.key = principalKeyOf(p) }

// principalKeyOf joins the parts of p's key, length-prefixed so that no
// choice of parts can forge another's key, and so that the quotas can cut
// the client off (quota.User).
func principalKeyOf(p *Principal) string {
	return quota.PrincipalKey(p.Issuer, p.Subject, p.ClientID)
}

type principalKey struct{}

// ContextWithPrincipal returns a copy of ctx carrying p, as the
// oauth.ResourceServer does for each verified request; tests use it to call
// handlers as a principal.
func ContextWithPrincipal(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFromContext returns the principal of the request ctx belongs
// to, and whether there is one (there is none when authorization is off).
// In a handler, ctx has the request's principal only with [Middleware]: a
// 2025 session's handler context derives from the session's, which
// carries the principal of the request that opened the session (or made a
// replica's view of it), not necessarily the current one.
func PrincipalFromContext(ctx context.Context) (*Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(*Principal)
	return p, ok && p != nil
}

// keyFrom returns the key of ctx's principal, "" without one.
func keyFrom(ctx context.Context) string {
	if p, ok := PrincipalFromContext(ctx); ok {
		return p.Key()
	}
	return ""
}
