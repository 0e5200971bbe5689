package oauth

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/vigil-mcp/vigil/middleware/auth"
)

// A task request that reaches a replica other than the task's is forwarded
// there through the cluster without its credentials (see
// ResourceServer.Endpoint, endpointGuard): it carries an assertion of
// the principal this replica verified, which the task's replica restores
// in place of a token. The cluster authenticates what it carries (the
// cluster key's MAC, with a timestamp and a nonce), the assertion inside
// it included: a second MAC under the same key would add nothing. The
// assertion names the resource, and expires with the principal's token or
// after assertionMaxAge, whichever comes first.

// assertionMaxAge is how long an assertion is good for, at most; a
// forwarded request is answered within seconds. assertionSkew is how far
// the replicas' clocks may disagree.
const (
	assertionMaxAge = 30 * time.Second
	assertionSkew   = 5 * time.Second
)

// maxAssertionBytes bounds an assertion a replica decodes: the principal
// of a token (at most maxTokenBytes) or of an introspection answer.
const maxAssertionBytes = 64 << 10

// assertion is the encoded principal of a forwarded request.
type assertion struct {
	Resource string         `json:"aud"`
	Expires  int64          `json:"exp"` // Unix milliseconds
	Issuer   string         `json:"iss,omitempty"`
	Subject  string         `json:"sub"`
	ClientID string         `json:"cid,omitempty"`
	Scopes   []string       `json:"scp,omitempty"`
	Expiry   int64          `json:"pexp,omitempty"` // auth.Principal.Expiry, Unix milliseconds; 0: none
	Claims   map[string]any `json:"claims,omitempty"`
	Actors   []string       `json:"act,omitempty"`
}

// asserted is what restorePrincipal puts in a forwarded request's context:
// its principal, or why it has none.
type asserted struct {
	p   *auth.Principal
	err error
}

type assertedKey struct{}

// assertPrincipal returns the assertion of r's principal, nil without one.
func (rs *ResourceServer) assertPrincipal(r *http.Request) []byte {
	p, ok := auth.PrincipalFromContext(r.Context())
	if !ok {
		return nil
	}
	exp := time.Now().Add(assertionMaxAge)
	if !p.Expiry.IsZero() && p.Expiry.Before(exp) {
		exp = p.Expiry
	}
	a := assertion{
		Resource: rs.cfg.Resource, Expires: exp.UnixMilli(),
		Issuer: p.Issuer, Subject: p.Subject, ClientID: p.ClientID, Scopes: p.Scopes, Claims: p.Claims,
		Actors: p.Actors,
	}
	if !p.Expiry.IsZero() {
		a.Expiry = p.Expiry.UnixMilli()
	}
	b, err := json.Marshal(a)
	if err != nil {
		rs.logger.Warn("auth: cannot assert the principal of a forwarded request", "error", err)
		return nil
	}
	return b
}

// restorePrincipal returns ctx with the principal data asserts, or with why
// it is refused: Handler answers the forwarded request accordingly.
func (rs *ResourceServer) restorePrincipal(ctx context.Context, data []byte) context.Context {
	p, err := rs.decodeAssertion(data, time.Now())
	return context.WithValue(ctx, assertedKey{}, &asserted{p: p, err: err})
}

// decodeAssertion returns the principal data asserts at now.
func (rs *ResourceServer) decodeAssertion(data []byte, now time.Time) (*auth.Principal, error) {
	invalid := func(desc string) error {
		return &Error{Reason: ReasonInvalidToken, Description: "forwarded request: " + desc}
	}
	var a assertion
	switch {
	case len(data) == 0:
		return nil, &Error{Reason: ReasonMissingToken, Description: "forwarded request without a principal"}
	case len(data) > maxAssertionBytes:
		return nil, invalid("principal assertion too large")
	case json.Unmarshal(data, &a) != nil:
		return nil, invalid("malformed principal assertion")
	case a.Resource != rs.cfg.Resource:
		return nil, &Error{Reason: ReasonWrongAudience, Description: "forwarded request: the principal was asserted for another resource"}
	case a.Subject == "":
		return nil, invalid("principal assertion without a subject")
	}
	expires := time.UnixMilli(a.Expires)
	switch {
	case !now.Before(expires) || a.Expiry != 0 && !now.Before(time.UnixMilli(a.Expiry)):
		return nil, &Error{Reason: ReasonExpired, Description: "forwarded request: the principal assertion expired"}
	case expires.Sub(now) > assertionMaxAge+assertionSkew:
		return nil, invalid("principal assertion valid for too long")
	}
	if len(a.Actors) > maxActors {
		return nil, invalid("principal assertion with too many actors")
	}
	p := &auth.Principal{Issuer: a.Issuer, Subject: a.Subject, ClientID: a.ClientID, Scopes: a.Scopes, Claims: a.Claims, Actors: a.Actors}
	if a.Expiry != 0 {
		p.Expiry = time.UnixMilli(a.Expiry).UTC()
	}
	p.Seal()
	return p, nil
}

// assertedFrom returns what restorePrincipal put in ctx, if anything: only
// a request another replica forwarded has it.
func assertedFrom(ctx context.Context) (*asserted, bool) {
	a, ok := ctx.Value(assertedKey{}).(*asserted)
	return a, ok
}
