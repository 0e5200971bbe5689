package oauth

import (
	"context"
	"net"
	"sync/atomic"
	"time"

	"github.com/vigil-mcp/vigil/internal/connstate"
	"github.com/vigil-mcp/vigil/middleware/auth"
)

// A connection recorded by streamable.ConnContext (which vigil.Service's
// HTTP server uses) gets a memo of the last token verified on it, made on
// the first verification, so that the verifiers of this package recognize
// a client's token by comparing it with the one before, instead of
// hashing it and looking the hash up in their cache. The verdict is the
// cache's, under the same rules: it ends at the token's expiry, or earlier
// with the cache's TTL, and with any change of the JWT verifier's key set.
// The memo also keeps the client's address, so that an introspection
// verifier can keep one address from taking every call to the
// authorization server (VerifierConfig.MaxConcurrentMisses). Without
// it every verification goes through the cache. The package doc says what
// the memo holds.

type connMemoKey struct{}

// connMemo is a connection's memo: its last verdict, replaced whole, and
// its client's address as a missGuard source.
type connMemo struct {
	last   atomic.Pointer[memoEntry]
	source string
}

// addr returns the memo's missGuard source; "" for a nil m.
func (m *connMemo) addr() string {
	if m == nil {
		return ""
	}
	return m.source
}

// memoEntry is a positive verdict for token by the verifier whose cache is
// cache, valid before until under key-set generation gen.
type memoEntry struct {
	cache *verdictCache
	token string
	p     *auth.Principal
	until time.Time
	gen   uint64
}

// connMemoFrom returns the memo of the connection ctx belongs to, or nil.
func connMemoFrom(ctx context.Context) *connMemo {
	st := connstate.From(ctx)
	if st == nil {
		return nil
	}
	return st.Value(connMemoKey{}, newConnMemo).(*connMemo)
}

// newConnMemo makes the memo of connection c.
func newConnMemo(c net.Conn) any { return &connMemo{source: sourceOf(c)} }

// recall returns the principal m holds for token, verified through c, if
// the verdict still holds at now under gen. A nil m or c recalls nothing.
func (m *connMemo) recall(c *verdictCache, token string, now time.Time, gen uint64) (*auth.Principal, bool) {
	if m == nil || c == nil {
		return nil, false
	}
	e := m.last.Load()
	if e == nil || e.cache != c || e.gen != gen || e.token != token || !now.Before(e.until) {
		return nil, false
	}
	return e.p, true
}

// remember makes p, verified through c and valid before until under gen,
// the verdict m holds for token. A nil m or c remembers nothing.
func (m *connMemo) remember(c *verdictCache, token string, p *auth.Principal, until time.Time, gen uint64) {
	if m == nil || c == nil {
		return
	}
	m.last.Store(&memoEntry{cache: c, token: token, p: p, until: until, gen: gen})
}
