package main

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/transport/protocol"
)

// thumbprint is the RFC 7638 thumbprint of k's public key, as cnf.jkt
// names it.
func (k dpopKey) thumbprint(t *testing.T) string {
	t.Helper()
	raw, err := k.priv.PublicKey.Bytes() // 0x04 || X || Y
	require.NoError(t, err)
	b64 := base64.RawURLEncoding.EncodeToString
	sum := sha256.Sum256([]byte(`{"crv":"P-256","kty":"EC","x":"` + b64(raw[1:33]) + `","y":"` + b64(raw[33:]) + `"}`))
	return b64(sum[:])
}

// dpopAuth presents token under the DPoP scheme with a fresh proof of key
// for each request to htu, and keeps the proofs it sent.
type dpopAuth struct {
	t      *testing.T
	key    dpopKey
	token  string
	htu    string
	base   http.RoundTripper
	mu     sync.Mutex
	proofs []string
}

func (d *dpopAuth) RoundTrip(req *http.Request) (*http.Response, error) {
	p := d.key.proof(d.t, req.Method, d.htu, d.token, "")
	d.mu.Lock()
	d.proofs = append(d.proofs, p)
	d.mu.Unlock()
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "DPoP "+d.token)
	req.Header.Set("DPoP", p)
	return d.base.RoundTrip(req)
}

func (d *dpopAuth) sent() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.proofs)
}

// aJWT matches a JWS in compact form: a header and claims, both JSON
// objects, base64url-encoded.
var aJWT = regexp.MustCompile(`eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}`)

// TestSecretsNeverShown is a probe of issue 66's review that held: no
// token or secret appears on the live page or in the debug log. vigil
// runs at -log-level debug with a token-exchange client secret; a Bearer
// session and a DPoP session each hold a call in flight, one exchanges
// its token, a 2026-07-28 request passes, a replayed proof and bad tokens
// are refused. Then /debug/vigil (HTML and JSON) and every kept trace's
// view, which name the callers, and the log hold none of the tokens (nor
// their claims or signatures), proofs or the secret, nor any JWT at all.
func TestSecretsNeverShown(t *testing.T) {
	port := authResource(t)
	as := startOIDCProvider(t, oidcOptions{Resource: port.resource, OtherResources: []string{downstream}, Exchanger: &exchanger, TestEndpoints: true})
	v := startVigilAuth(t, port, as.Issuer(), []string{"VIGIL_AUTH_EXCHANGE_CLIENT_SECRET=" + exchanger.Secret},
		"-auth-exchange-endpoint", as.Issuer()+"/token", "-auth-exchange-client-id", exchanger.ID)
	base := strings.TrimSuffix(v.url, "/mcp")
	key := as.Keys()[0]
	secrets := map[string]string{"the exchange client's secret": exchanger.Secret}
	addJWT := func(what, jwt string) {
		secrets[what] = jwt
		if parts := strings.Split(jwt, "."); len(parts) == 3 {
			secrets[what+"'s claims"], secrets[what+"'s signature"] = parts[1], parts[2]
		}
	}

	bearerToken := as.Token(t, "vigil.read", "vigil.slow")
	addJWT("the Bearer token", bearerToken)
	bc := v.session(t, bearerToken)
	bearerCall := bc.startCall(t.Context(), "sleep", map[string]any{"ms": 30000}, "")
	msg, err := bc.callTool(t.Context(), "downstream_whoami", map[string]any{"audience": downstream, "scopes": []string{"vigil.read"}}, "")
	require.NoError(t, err)
	require.Nil(t, msg.Error)
	require.NotContains(t, string(msg.Result), `"isError":true`, "the exchange succeeded: %s", msg.Result)

	dk := newDPoPKey(t)
	claims := accessClaims(as.Issuer(), v.resource, "vigil.read", "vigil.slow")
	claims["cnf"] = map[string]any{"jkt": dk.thumbprint(t)}
	dpopToken := key.Sign(t, claims)
	addJWT("the DPoP-bound token", dpopToken)
	auth := &dpopAuth{t: t, key: dk, token: dpopToken, htu: v.url, base: v.hc.Transport}
	dc := newE2EClient(v.url, &http.Client{Transport: auth, Timeout: 10 * time.Second})
	require.NoError(t, dc.initialize(t.Context()), "a DPoP session")
	dpopCall := dc.startCall(t.Context(), "sleep", map[string]any{"ms": 30000}, "")

	replayed := auth.sent()[0]
	st, _ := postDPoP(t, v.url, http.Header{"Authorization": {"DPoP " + dpopToken}, "Dpop": {replayed}})
	assert.Equal(t, http.StatusUnauthorized, st, "a replayed proof is refused")
	wrongAth := dk.proof(t, http.MethodPost, v.url, "another token", "")
	addJWT("a proof of another token", wrongAth)
	st, _ = postDPoP(t, v.url, http.Header{"Authorization": {"DPoP " + dpopToken}, "Dpop": {wrongAth}})
	assert.Equal(t, http.StatusUnauthorized, st, "a proof of another token is refused")

	stateless := policyEras(t, v, bearerToken)[protocol.Version20260728]("tools/call", `{"name":"echo","arguments":{"text":"hi"}}`)
	assert.Nil(t, stateless["error"], "a 2026-07-28 call: %v", stateless)

	expired := accessClaims(as.Issuer(), v.resource, "vigil.read")
	expired["iat"], expired["exp"] = time.Now().Add(-time.Hour).Unix(), time.Now().Add(-time.Minute).Unix()
	otherAudience := accessClaims(as.Issuer(), "http://127.0.0.1:9/elsewhere", "vigil.read")
	refused := map[string]string{
		"an expired token":            key.Sign(t, expired),
		"a token of another audience": key.Sign(t, otherAudience),
		"a token that is no JWT":      "nope-secret-" + rand.Text(),
	}
	for what, tok := range refused {
		addJWT(what, tok)
		v.initialize(t, tok).requireRefused(t, http.StatusUnauthorized, "invalid_token")
	}

	var snap debugSnapshot
	svcEventually(t, "both sleeps in flight on /debug/vigil", 10*time.Second, func() (bool, error) {
		var err error
		snap, err = svcDebug(v.hc, base)
		return err == nil && len(slices.DeleteFunc(slices.Clone(snap.InFlight), func(r debugRequest) bool { return r.Name != "sleep" })) == 2, err
	})
	for i, proof := range auth.sent() {
		addJWT(fmt.Sprintf("proof %d of the DPoP session", i), proof)
	}
	views := map[string]string{
		"the page":        debugBody(t, v.hc, base+"/debug/vigil?refresh=0"),
		"the page's JSON": debugBody(t, v.hc, base+"/debug/vigil?format=json"),
	}
	assert.Contains(t, views["the page's JSON"], `"subject": "`+oidcClientID+`"`, "the page names the callers")
	require.NotEmpty(t, snap.Traces, "traces are kept")
	for _, tr := range snap.Traces {
		u := base + "/debug/vigil/trace/" + tr.TraceID
		views["trace "+tr.TraceID] = debugBody(t, v.hc, u)
		views["trace "+tr.TraceID+" JSON"] = debugBody(t, v.hc, u+"?format=json")
	}
	// The log is written every 100 ms (asyncwriter), and whole once vigil
	// stopped.
	for _, call := range []*pendingCall{bearerCall, dpopCall} {
		call.abort()
		<-call.done
	}
	require.NoError(t, v.proc.stop(10*time.Second), "vigil must exit with status 0 after SIGTERM")
	views["the debug log"] = v.logs.String()
	for _, logged := range []string{"msg=stopped", `level=DEBUG msg="auth: request refused" reason=invalid_dpop_proof`, "reason=expired", "reason=wrong_audience", "reason=invalid_token", "tool=downstream_whoami", "tool=echo"} {
		assert.Contains(t, views["the debug log"], logged, "the debug log records the requests")
	}
	for view, body := range views {
		for what, secret := range secrets {
			assert.NotContains(t, body, secret, "%s shows %s", view, what)
		}
		assert.Empty(t, aJWT.FindAllString(body, 3), "%s shows a JWT", view)
	}
}
