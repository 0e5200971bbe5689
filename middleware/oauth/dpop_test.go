package oauth

import (
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/internal/wwwauth"
	"github.com/vigil-mcp/vigil/middleware/auth"
)

// dpEnv is a resource server accepting DPoP, with a JWT verifier of a test
// issuer, a client's proof key and a token bound to it.
type dpEnv struct {
	t      *testing.T
	is     *vtIssuer
	as     vtKey // the issuer's signing key
	clock  *vtClock
	reg    *prometheus.Registry
	rs     *ResourceServer
	h      http.Handler
	key    vtKey  // the client's proof key
	jkt    string // its thumbprint
	bound  string // a token bound to key
	served *auth.Principal
}

// ecThumbprint computes the RFC 7638 thumbprint of an EC public JWK as the
// RFC writes it out, apart from the code under test.
func ecThumbprint(jwk map[string]any) string {
	s := fmt.Sprintf(`{"crv":"%s","kty":"EC","x":"%s","y":"%s"}`, jwk["crv"], jwk["x"], jwk["y"])
	sum := sha256.Sum256([]byte(s))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

func newDPoPEnv(t *testing.T, mutate ...func(*DPoPConfig)) *dpEnv {
	t.Helper()
	e := &dpEnv{t: t, as: vtECKey(t, "as"), clock: vtNewClock(), key: vtECKey(t, "client")}
	e.is = vtNewIssuer(t, e.as)
	e.jkt = ecThumbprint(e.key.jwk(t))
	e.bound = e.token(e.jkt)
	return e.replica(mutate...)
}

// replica returns another resource server of e's issuer, client and clock.
func (e *dpEnv) replica(mutate ...func(*DPoPConfig)) *dpEnv {
	t := e.t
	t.Helper()
	r := &dpEnv{t: t, is: e.is, as: e.as, clock: e.clock, key: e.key, jkt: e.jkt, bound: e.bound, reg: prometheus.NewPedanticRegistry()}
	d := &DPoPConfig{now: e.clock.Now}
	for _, m := range mutate {
		m(d)
	}
	rs, err := New(Config{
		Resource:             vtResource,
		AuthorizationServers: []string{e.is.srv.URL},
		Verifier:             vtNewJWTVerifier(t, e.is, e.clock),
		DPoP:                 d,
		Registerer:           r.reg,
	})
	require.NoError(t, err)
	r.rs = rs
	r.h = rs.Handler(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.served, _ = auth.PrincipalFromContext(req.Context())
		w.WriteHeader(http.StatusOK)
	}))
	return r
}

// token returns an access token of the issuer, bound to jkt unless "".
func (e *dpEnv) token(jkt string) string {
	return vtSign(e.t, e.as, e.is.claims(e.clock.Now(), func(c jwt.MapClaims) {
		if jkt != "" {
			c["cnf"] = map[string]any{"jkt": jkt}
		}
	}))
}

// athOf is a proof's ath for token.
func athOf(token string) string {
	sum := sha256.Sum256([]byte(token))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// proof returns a valid proof of e.key for a POST of e.bound to the
// resource, with its header and claims changed by mutate.
func (e *dpEnv) proof(mutate func(h map[string]any, c jwt.MapClaims)) string {
	return e.proofBy(e.key, mutate)
}

func (e *dpEnv) proofBy(k vtKey, mutate func(h map[string]any, c jwt.MapClaims)) string {
	e.t.Helper()
	var jti [12]byte
	_, _ = rand.Read(jti[:])
	c := jwt.MapClaims{
		"jti": base64.RawURLEncoding.EncodeToString(jti[:]),
		"htm": http.MethodPost,
		"htu": vtResource,
		"iat": e.clock.Now().Unix(),
		"ath": athOf(e.bound),
	}
	jwk := e.key.jwk(e.t)
	h := map[string]any{"typ": "dpop+jwt", "jwk": jwk}
	if mutate != nil {
		mutate(h, c)
	}
	tok := jwt.NewWithClaims(k.method, c)
	for name, v := range h {
		if v == nil {
			delete(tok.Header, name)
		} else {
			tok.Header[name] = v
		}
	}
	s, err := tok.SignedString(k.priv)
	require.NoError(e.t, err)
	return s
}

// do sends a POST with the Authorization and DPoP headers given.
func (e *dpEnv) do(authz string, proofs ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, vtResource, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Authorization", authz)
	for _, p := range proofs {
		r.Header.Add("DPoP", p)
	}
	w := httptest.NewRecorder()
	e.served = nil
	e.h.ServeHTTP(w, r)
	return w
}

func (e *dpEnv) failures(reason Reason) int {
	mfs, err := e.reg.Gather()
	require.NoError(e.t, err)
	for _, mf := range mfs {
		if mf.GetName() != mcpconv.MetricAuthFailures {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() == reason.String() {
				return int(m.GetCounter().GetValue())
			}
		}
	}
	e.t.Fatalf("no series for %s", reason)
	return 0
}

// challenges returns the WWW-Authenticate challenges of w by scheme.
func challenges(t *testing.T, w *httptest.ResponseRecorder) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{}
	for _, v := range w.Header().Values("WWW-Authenticate") {
		scheme, params, err := wwwauth.Parse(v)
		require.NoError(t, err, v)
		out[scheme] = params
	}
	return out
}

// TestDPoPProofChecks has one valid proof, then one row per check of RFC
// 9449 §4.3 (and the token's binding) with a proof that fails that check
// only: each is refused with its reason and error code, counted once.
func TestDPoPProofChecks(t *testing.T) {
	e := newDPoPEnv(t)
	other := vtECKey(t, "other")
	short, err := rsa.GenerateKey(rand.Reader, 1024)
	require.NoError(t, err)
	shortKey := vtKey{kid: "short", method: jwt.SigningMethodRS256, priv: short}

	w := e.do("DPoP "+e.bound, e.proof(nil))
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	require.NotNil(t, e.served)
	assert.Equal(t, e.jkt, e.served.KeyThumbprint)

	type row struct {
		name   string
		authz  string   // "" means "DPoP "+e.bound
		proofs []string // nil means none
		status int
		reason Reason
		code   string // the DPoP challenge's error
		desc   string // in its error_description, when set
	}
	bad := func(name string, p string) row {
		return row{name: name, proofs: []string{p}, status: http.StatusUnauthorized, reason: ReasonInvalidDPoPProof, code: "invalid_dpop_proof"}
	}
	described := func(r row, desc string) row { r.desc = desc; return r }
	good := func(name string, p string) row { return row{name: name, proofs: []string{p}, status: http.StatusOK} }
	claim := func(name string, v any) func(map[string]any, jwt.MapClaims) {
		return func(_ map[string]any, c jwt.MapClaims) {
			if v == nil {
				delete(c, name)
			} else {
				c[name] = v
			}
		}
	}
	header := func(name string, v any) func(map[string]any, jwt.MapClaims) {
		return func(h map[string]any, _ jwt.MapClaims) { h[name] = v }
	}
	now := e.clock.Now()
	hs := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"jti": "x", "htm": "POST", "htu": vtResource, "iat": now.Unix(), "ath": athOf(e.bound)})
	hs.Header["typ"], hs.Header["jwk"] = "dpop+jwt", e.key.jwk(t)
	hsProof, err := hs.SignedString([]byte("a shared secret of 32 bytes!!!!"))
	require.NoError(t, err)
	none := jwt.NewWithClaims(jwt.SigningMethodNone, jwt.MapClaims{"jti": "y", "htm": "POST", "htu": vtResource, "iat": now.Unix(), "ath": athOf(e.bound)})
	none.Header["typ"], none.Header["jwk"] = "dpop+jwt", e.key.jwk(t)
	noneProof, err := none.SignedString(jwt.UnsafeAllowNoneSignatureType)
	require.NoError(t, err)
	// A modulus too long to be worth verifying with: refused before any
	// signature work, so no private key is needed.
	n := make([]byte, 8200/8)
	_, _ = rand.Read(n)
	n[0], n[len(n)-1] = 0xff, n[len(n)-1]|1
	longRSA := map[string]any{"kty": "RSA", "e": "AQAB", "n": base64.RawURLEncoding.EncodeToString(n)}
	withPrivate := e.key.jwk(t)
	d, err := e.key.priv.(*ecdsa.PrivateKey).Bytes()
	require.NoError(t, err)
	withPrivate["d"] = base64.RawURLEncoding.EncodeToString(d)

	rows := []row{
		{name: "no DPoP header", status: http.StatusUnauthorized, reason: ReasonInvalidDPoPProof, code: "invalid_dpop_proof"},
		{name: "two DPoP headers", proofs: []string{e.proof(nil), e.proof(nil)}, status: http.StatusUnauthorized, reason: ReasonInvalidDPoPProof, code: "invalid_dpop_proof"},
		bad("not a JWT", "not.a.jwt"),
		bad("oversized", strings.Repeat("a", maxProofBytes+1)),
		bad("typ JWT", e.proof(header("typ", "JWT"))),
		bad("no typ", e.proof(header("typ", nil))),
		bad("crit", e.proof(header("crit", []string{"exp"}))),
		bad("alg HS256", hsProof),
		bad("alg none", noneProof),
		bad("signed by another key", e.proofBy(other, nil)),
		bad("no jwk", e.proof(header("jwk", nil))),
		bad("jwk with the private key", e.proof(header("jwk", withPrivate))),
		bad("jwk symmetric", e.proof(header("jwk", map[string]any{"kty": "oct", "k": "c2VjcmV0"}))),
		described(bad("RSA key of 1024 bits", e.proofBy(shortKey, header("jwk", shortKey.jwk(t)))), "RSA key"),
		described(bad("RSA key of 8200 bits", e.proofBy(shortKey, header("jwk", longRSA))), "RSA key"),
		bad("no jti", e.proof(claim("jti", nil))),
		bad("jti too long", e.proof(claim("jti", strings.Repeat("j", maxJTIBytes+1)))),
		bad("htm GET", e.proof(claim("htm", http.MethodGet))),
		bad("htm lowercase", e.proof(claim("htm", "post"))),
		bad("no htm", e.proof(claim("htm", nil))),
		bad("htu of another host", e.proof(claim("htu", "https://evil.example.com/mcp"))),
		bad("htu of another path", e.proof(claim("htu", "https://mcp.example.com/other"))),
		bad("htu of http", e.proof(claim("htu", "http://mcp.example.com/mcp"))),
		bad("no htu", e.proof(claim("htu", nil))),
		good("htu normalized: case, default port, query, fragment", e.proof(claim("htu", "HTTPS://MCP.Example.COM:443/mcp?x=1#frag"))),
		bad("iat too old", e.proof(claim("iat", now.Add(-2*time.Minute).Unix()))),
		bad("iat in the future", e.proof(claim("iat", now.Add(2*time.Minute).Unix()))),
		good("iat 10 s ahead (a fast clock)", e.proof(claim("iat", now.Add(10*time.Second).Unix()))),
		bad("iat 11 s ahead", e.proof(claim("iat", now.Add(11*time.Second).Unix()))),
		bad("iat 59 s ahead", e.proof(claim("iat", now.Add(59*time.Second).Unix()))),
		good("iat 59 s ago", e.proof(claim("iat", now.Add(-59*time.Second).Unix()))),
		bad("iat a string", e.proof(claim("iat", fmt.Sprint(now.Unix())))),
		bad("no iat", e.proof(claim("iat", nil))),
		bad("ath of another token", e.proof(claim("ath", athOf("another token")))),
		bad("no ath", e.proof(claim("ath", nil))),
	}
	otherBound, unbound := e.token(ecThumbprint(other.jwk(t))), e.token("")
	rows = append(rows,
		row{
			name: "token bound to another key", authz: "DPoP " + otherBound, proofs: []string{e.proof(claim("ath", athOf(otherBound)))},
			status: http.StatusUnauthorized, reason: ReasonInvalidToken, code: "invalid_token",
		},
		row{
			name: "token bound to no key", authz: "DPoP " + unbound, proofs: []string{e.proof(claim("ath", athOf(unbound)))},
			status: http.StatusUnauthorized, reason: ReasonInvalidToken, code: "invalid_token",
		})
	replayed := e.proof(nil)
	require.Equal(t, http.StatusOK, e.do("DPoP "+e.bound, replayed).Code)
	rows = append(rows, bad("replayed", replayed))

	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			authz := r.authz
			if authz == "" {
				authz = "DPoP " + e.bound
			}
			before := e.failures(r.reason)
			w := e.do(authz, r.proofs...)
			require.Equal(t, r.status, w.Code, w.Body.String())
			if r.status == http.StatusOK {
				return
			}
			assert.Nil(t, e.served)
			assert.Equal(t, before+1, e.failures(r.reason), "counted once as %s", r.reason)
			ch := challenges(t, w)
			require.Contains(t, ch, "DPoP", "a DPoP challenge")
			assert.Equal(t, r.code, ch["DPoP"]["error"])
			assert.Contains(t, ch["DPoP"]["error_description"], r.desc)
			assert.Equal(t, strings.Join(defaultAlgorithms, " "), ch["DPoP"]["algs"])
			require.Contains(t, ch, "Bearer", "Bearer is accepted too")
			assert.Empty(t, ch["Bearer"]["error"], "the error is the DPoP challenge's")
		})
	}
}

// TestDPoPBoundTokenAsBearer: a DPoP-bound token presented as Bearer is
// refused (RFC 9449 §7.2), with DPoP accepted or not, from a JWT and from
// introspection; its unbound twin is accepted.
func TestDPoPBoundTokenAsBearer(t *testing.T) {
	e := newDPoPEnv(t)
	w := e.do("Bearer " + e.bound)
	require.Equal(t, http.StatusUnauthorized, w.Code)
	assert.Equal(t, "invalid_token", challenges(t, w)["Bearer"]["error"])
	assert.Equal(t, 1, e.failures(ReasonInvalidToken))
	require.Equal(t, http.StatusOK, e.do("Bearer "+e.token("")).Code, "an unbound token")

	clock := vtNewClock()
	in := vtNewIntrospector(t)
	in.set("bound", in.active(clock.Now(), func(a map[string]any) { a["cnf"] = map[string]any{"jkt": e.jkt} }))
	in.set("unbound", in.active(clock.Now()))
	iv := vtNewIntrospectionVerifier(t, in, clock)
	p, err := iv.Verify(t.Context(), "bound")
	require.NoError(t, err)
	assert.Equal(t, e.jkt, p.KeyThumbprint, "cnf.jkt from introspection")
	rs, err := New(Config{Resource: vtResource, AuthorizationServers: []string{in.issuer}, Verifier: iv})
	require.NoError(t, err)
	h := rs.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	for token, want := range map[string]int{"bound": http.StatusUnauthorized, "unbound": http.StatusOK} {
		r := httptest.NewRequest(http.MethodPost, vtResource, strings.NewReader("{}"))
		r.Header.Set("Authorization", "Bearer "+token)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		assert.Equal(t, want, w.Code, token)
	}
	in.set("bad-cnf", in.active(clock.Now(), func(a map[string]any) { a["cnf"] = map[string]any{"jkt": 7} }))
	_, err = iv.Verify(t.Context(), "bad-cnf")
	assert.Equal(t, ReasonInvalidToken, vtReason(t, err), "a cnf.jkt that is not a string")
}

// TestDPoPRequired: with Required, a Bearer token is refused with a DPoP
// challenge alone, and the metadata says so.
func TestDPoPRequired(t *testing.T) {
	e := newDPoPEnv(t, func(d *DPoPConfig) { d.Required = true })
	w := e.do("Bearer " + e.token(""))
	require.Equal(t, http.StatusUnauthorized, w.Code)
	ch := challenges(t, w)
	assert.NotContains(t, ch, "Bearer")
	assert.Equal(t, "invalid_token", ch["DPoP"]["error"])
	require.Equal(t, http.StatusOK, e.do("DPoP "+e.bound, e.proof(nil)).Code)

	var md map[string]any
	mw := httptest.NewRecorder()
	e.rs.MetadataHandlers()["/.well-known/oauth-protected-resource/mcp"].ServeHTTP(mw, httptest.NewRequest(http.MethodGet, "/.well-known/oauth-protected-resource/mcp", nil))
	require.NoError(t, json.Unmarshal(mw.Body.Bytes(), &md))
	assert.Equal(t, true, md["dpop_bound_access_tokens_required"])
	assert.Len(t, md["dpop_signing_alg_values_supported"], len(defaultAlgorithms))
}

// TestDPoPMetadataAndChallenge: with DPoP, the metadata names the proof
// algorithms and a request without a token gets both challenges; without
// DPoP, neither, and the DPoP scheme is not one this server takes.
func TestDPoPMetadataAndChallenge(t *testing.T) {
	e := newDPoPEnv(t, func(d *DPoPConfig) { d.Algorithms = []string{"ES256", "EdDSA"} })
	var md map[string]any
	mw := httptest.NewRecorder()
	e.rs.MetadataHandlers()["/.well-known/oauth-protected-resource/mcp"].ServeHTTP(mw, httptest.NewRequest(http.MethodGet, "/.well-known/oauth-protected-resource/mcp", nil))
	require.NoError(t, json.Unmarshal(mw.Body.Bytes(), &md))
	assert.Equal(t, []any{"ES256", "EdDSA"}, md["dpop_signing_alg_values_supported"])
	assert.NotContains(t, md, "dpop_bound_access_tokens_required")
	w := e.do("")
	require.Equal(t, http.StatusUnauthorized, w.Code)
	ch := challenges(t, w)
	assert.Equal(t, "ES256 EdDSA", ch["DPoP"]["algs"])
	assert.Contains(t, ch, "Bearer")
	assert.Equal(t, 1, e.failures(ReasonMissingToken))

	bad := func(d *DPoPConfig) error {
		_, err := New(Config{Resource: vtResource, AuthorizationServers: []string{"https://as"}, Verifier: vtNewJWTVerifier(t, e.is, e.clock), DPoP: d})
		return err
	}
	require.Error(t, bad(&DPoPConfig{Algorithms: []string{"HS256"}}), "a symmetric algorithm")
	err := bad(&DPoPConfig{NonceKey: []byte("short")})
	require.Error(t, err, "a short nonce key")

	plain, err := New(Config{Resource: vtResource, AuthorizationServers: []string{"https://as"}, Verifier: vtNewJWTVerifier(t, e.is, e.clock)})
	require.NoError(t, err)
	mw = httptest.NewRecorder()
	plain.MetadataHandlers()["/.well-known/oauth-protected-resource"].ServeHTTP(mw, httptest.NewRequest(http.MethodGet, "/.well-known/oauth-protected-resource", nil))
	assert.NotContains(t, mw.Body.String(), "dpop")
	r := httptest.NewRequest(http.MethodPost, vtResource, nil)
	r.Header.Set("Authorization", "DPoP "+e.bound)
	r.Header.Set("DPoP", e.proof(nil))
	pw := httptest.NewRecorder()
	plain.Handler(http.NotFoundHandler()).ServeHTTP(pw, r)
	require.Equal(t, http.StatusUnauthorized, pw.Code, "without DPoP, the DPoP scheme is no token")
	assert.Equal(t, []string{"Bearer"}, keys(challenges(t, pw)))
}

func keys(m map[string]map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestDPoPNonce: with a nonce key, a proof without the server's nonce gets
// 401 use_dpop_nonce and a DPoP-Nonce, which a new proof carries to pass;
// a nonce of another key, or two epochs old, is refused the same way.
func TestDPoPNonce(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	e := newDPoPEnv(t, func(d *DPoPConfig) { d.NonceKey = key })
	w := e.do("DPoP "+e.bound, e.proof(nil))
	require.Equal(t, http.StatusUnauthorized, w.Code)
	assert.Equal(t, "use_dpop_nonce", challenges(t, w)["DPoP"]["error"])
	assert.Equal(t, 1, e.failures(ReasonUseDPoPNonce))
	nonce := w.Header().Get("DPoP-Nonce")
	require.NotEmpty(t, nonce)
	withNonce := func(n string) string {
		return e.proof(func(_ map[string]any, c jwt.MapClaims) { c["nonce"] = n })
	}
	ok := e.do("DPoP "+e.bound, withNonce(nonce))
	require.Equal(t, http.StatusOK, ok.Code)
	assert.Equal(t, nonce, ok.Header().Get("DPoP-Nonce"), "the current nonce rides on every DPoP answer")

	// Another replica with the same key takes it; one with another key
	// does not.
	same := e.replica(func(d *DPoPConfig) { d.NonceKey = key })
	require.Equal(t, http.StatusOK, same.do("DPoP "+e.bound, withNonce(nonce)).Code)
	other := e.replica(func(d *DPoPConfig) { d.NonceKey = []byte("another key of at least 32 bytes!") })
	require.Equal(t, http.StatusUnauthorized, other.do("DPoP "+e.bound, withNonce(nonce)).Code)

	e.clock.Advance(nonceEpoch)
	e.bound = e.token(e.jkt)
	ok = e.do("DPoP "+e.bound, withNonce(nonce))
	require.Equal(t, http.StatusOK, ok.Code, "the previous epoch's nonce")
	assert.NotEqual(t, nonce, ok.Header().Get("DPoP-Nonce"), "answered with the new one")

	e.clock.Advance(nonceEpoch)
	e.bound = e.token(e.jkt)
	w = e.do("DPoP "+e.bound, withNonce(nonce))
	require.Equal(t, http.StatusUnauthorized, w.Code, "a nonce two epochs old")
	assert.Equal(t, "use_dpop_nonce", challenges(t, w)["DPoP"]["error"])
	assert.NotEqual(t, nonce, w.Header().Get("DPoP-Nonce"))
}

// TestDPoPSharedReplay: two resource servers sharing one Replay store
// accept a proof once between them; a store that fails refuses with 503.
func TestDPoPSharedReplay(t *testing.T) {
	var mu sync.Mutex
	used := map[string]bool{}
	var ttls []time.Duration
	store := func(_ context.Context, digest string, ttl time.Duration) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		ttls = append(ttls, ttl)
		if used[digest] {
			return false, nil
		}
		used[digest] = true
		return true, nil
	}
	a := newDPoPEnv(t, func(d *DPoPConfig) { d.Replay = store })
	b := a.replica(func(d *DPoPConfig) { d.Replay = store })
	p := a.proof(nil)
	require.Equal(t, http.StatusOK, a.do("DPoP "+a.bound, p).Code)
	w := b.do("DPoP "+a.bound, p)
	require.Equal(t, http.StatusUnauthorized, w.Code, "replayed on the other replica")
	assert.Equal(t, "invalid_dpop_proof", challenges(t, w)["DPoP"]["error"])
	require.Equal(t, http.StatusOK, b.do("DPoP "+a.bound, a.proof(nil)).Code, "a fresh proof")
	for digest := range used {
		assert.Len(t, digest, 64, "a hex SHA-256")
		assert.NotContains(t, digest, a.jkt)
	}
	for _, ttl := range ttls {
		assert.True(t, ttl > 0 && ttl <= defaultDPoPWindow+time.Second, "ttl %v", ttl)
	}

	c := newDPoPEnv(t, func(d *DPoPConfig) {
		d.Replay = func(context.Context, string, time.Duration) (bool, error) { return false, fmt.Errorf("redis down") }
	})
	w = c.do("DPoP "+c.bound, c.proof(nil))
	require.Equal(t, http.StatusServiceUnavailable, w.Code)
	assert.Equal(t, 1, c.failures(ReasonVerifierError))
}

// TestThumbprintRFC7638 checks the thumbprint against RFC 7638 §3.1's
// example.
func TestThumbprintRFC7638(t *testing.T) {
	var m struct {
		N, E, Kty string
	}
	m.Kty, m.E = "RSA", "AQAB"
	m.N = "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw"
	b, _ := json.Marshal(map[string]string{"kty": m.Kty, "e": m.E, "n": m.N})
	var raw map[string]any
	require.NoError(t, json.Unmarshal(b, &raw))
	h := map[string]any{"jwk": raw, "typ": "dpop+jwt", "alg": "RS256"}
	d, err := newDPoPChecker(&DPoPConfig{}, vtResource)
	require.NoError(t, err)
	_, jkt, e := d.proofKey(&jwt.Token{Header: h, Method: jwt.SigningMethodRS256})
	require.Nil(t, e)
	assert.Equal(t, "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs", jkt)
}

// TestDPoPReplayRace: one proof presented by sixteen requests at once is
// accepted by one of them, whether they reach one resource server or are
// spread over two sharing a Replay store; the others are refused as
// invalid_dpop_proof, each counted, and never reach the handler.
func TestDPoPReplayRace(t *testing.T) {
	const n = 16
	for _, shared := range []bool{false, true} {
		t.Run(fmt.Sprintf("shared=%v", shared), func(t *testing.T) {
			var mu sync.Mutex
			used := map[string]bool{}
			store := func(_ context.Context, digest string, _ time.Duration) (bool, error) {
				mu.Lock()
				defer mu.Unlock()
				first := !used[digest]
				used[digest] = true
				return first, nil
			}
			var opts []func(*DPoPConfig)
			if shared {
				opts = append(opts, func(d *DPoPConfig) { d.Replay = store })
			}
			e := newDPoPEnv(t, opts...)
			envs := []*dpEnv{e}
			if shared {
				envs = append(envs, e.replica(opts...))
			}
			var served atomic.Int64
			var handlers []http.Handler
			for _, env := range envs {
				handlers = append(handlers, env.rs.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
					served.Add(1)
					w.WriteHeader(http.StatusOK)
				})))
			}
			p := e.proof(nil)
			codes := make([]int, n)
			begin := make(chan struct{})
			var wg sync.WaitGroup
			for i := range n {
				r := httptest.NewRequest(http.MethodPost, vtResource, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
				r.Header.Set("Content-Type", "application/json")
				r.Header.Set("Authorization", "DPoP "+e.bound)
				r.Header.Set("DPoP", p)
				wg.Go(func() {
					<-begin
					w := httptest.NewRecorder()
					handlers[i%len(handlers)].ServeHTTP(w, r)
					codes[i] = w.Code
				})
			}
			close(begin)
			wg.Wait()
			accepted, refused := 0, 0
			for _, c := range codes {
				switch c {
				case http.StatusOK:
					accepted++
				case http.StatusUnauthorized:
					refused++
				}
			}
			assert.Equal(t, 1, accepted, "codes %v", codes)
			assert.Equal(t, n-1, refused, "codes %v", codes)
			assert.Equal(t, int64(1), served.Load(), "the handler ran once")
			counted := 0
			for _, env := range envs {
				counted += env.failures(ReasonInvalidDPoPProof)
			}
			assert.Equal(t, n-1, counted, "each replay counted")
		})
	}
}
