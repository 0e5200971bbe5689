package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/testkit/redistest"
	"github.com/vigil-mcp/vigil/internal/wwwauth"
)

// dpopClientDir holds the TypeScript SDK v2 client (its node_modules) and
// dpop-client.mjs.
var dpopClientDir = filepath.Join("..", "vigil-everything", "testdata", "clientv2")

// rrRecord is one request the round-robin front passed on, and its answer.
type rrRecord struct {
	backend int
	method  string
	header  http.Header
	body    []byte
	status  int
}

// rrFront is a load balancer in front of replicas: round robin, each
// request recorded with the status its replica answered.
type rrFront struct {
	proxies []*httputil.ReverseProxy
	next    atomic.Uint64
	mu      sync.Mutex
	records []rrRecord
}

func newRRFront(t *testing.T, addrs ...string) *rrFront {
	t.Helper()
	f := &rrFront{}
	for _, a := range addrs {
		u, err := url.Parse("http://" + a)
		require.NoError(t, err)
		p := httputil.NewSingleHostReverseProxy(u)
		p.FlushInterval = -1 // SSE streams pass as they are written
		f.proxies = append(f.proxies, p)
	}
	return f
}

// statusWriter records the status a replica answered.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (f *rrFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	i := int((f.next.Add(1) - 1) % uint64(len(f.proxies)))
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	sw := &statusWriter{ResponseWriter: w}
	f.proxies[i].ServeHTTP(sw, r)
	f.mu.Lock()
	f.records = append(f.records, rrRecord{backend: i, method: r.Method, header: r.Header.Clone(), body: body, status: sw.status})
	f.mu.Unlock()
}

// reset forgets the requests recorded.
func (f *rrFront) reset() {
	f.mu.Lock()
	f.records = nil
	f.mu.Unlock()
}

// dpopAccepted returns the requests presented with DPoP that a replica
// answered with success, and how many each replica answered.
func (f *rrFront) dpopAccepted() ([]rrRecord, map[int]int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []rrRecord
	per := map[int]int{}
	for _, rec := range f.records {
		if strings.HasPrefix(rec.header.Get("Authorization"), "DPoP ") && rec.header.Get("DPoP") != "" && rec.status/100 == 2 {
			out = append(out, rec)
			per[rec.backend]++
		}
	}
	return out, per
}

// TestDPoPReplicasEndToEnd runs, in both protocol eras (2025: a session
// the replicas share), the shipped vigil as two replicas on one
// real redis-server, behind a round-robin front, with -auth-issuer a real
// oidc-provider; the TypeScript SDK v2 client, with its DpopSession, gets a
// DPoP-bound token (client credentials) and calls tools through the front,
// each request with a fresh proof, answered by both replicas. Then a proof
// one replica accepted is replayed, exactly, on the other: refused 401
// invalid_dpop_proof (its jti is on Redis), and counted there; and the
// bound token presented as Bearer is refused 401 invalid_token. Redis
// holds a record per proof and learns no token, thumbprint or jti.
func TestDPoPReplicasEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("two replicas, an authorization server and a Node client: skipped with -short")
	}
	node := requireOIDCProvider(t)
	if _, err := os.Stat(filepath.Join(dpopClientDir, "node_modules", "@modelcontextprotocol", "client")); err != nil {
		missingComponent(t, dpopClientDir+"/node_modules is missing; run `make test` (or `make interop-deps`) to install the TypeScript SDK v2 client")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	resource := "http://" + ln.Addr().String() + "/mcp" // the service's external URL: the front's
	as := startOIDCProvider(t, oidcOptions{Resource: resource})
	rs := redistest.Start(t)
	var addrs []string
	for range 2 {
		addrs = append(addrs, startRLReplica(t, rs.URL(), "-auth-issuer", as.Issuer(), "-auth-resource", resource))
	}
	front := newRRFront(t, addrs...)
	srv := &http.Server{Handler: front, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	var secrets []string // what Redis must not learn: tokens, key thumbprints, jtis
	for _, era := range []struct{ name, protocol string }{{"legacy", "2025-11-25"}, {"modern", "2026-07-28"}} {
		t.Run(era.name, func(t *testing.T) {
			front.reset()
			secrets = append(secrets, dpopThroughReplicas(t, node, front, addrs, resource, as.Issuer(), era.name, era.protocol)...)
		})
	}

	// Redis holds a record of each proof, under a key that tells nothing
	// of it, and none of the secrets anywhere (keys or string values).
	rdb := rs.Client(t)
	var keys []string
	iter := rdb.Scan(t.Context(), 0, "*", 100).Iterator()
	for iter.Next(t.Context()) {
		keys = append(keys, iter.Val())
	}
	require.NoError(t, iter.Err())
	proofs := 0
	for _, k := range keys {
		if strings.HasPrefix(k, "vigil:dpop:") {
			proofs++
		}
		held := k
		if rdb.Type(t.Context(), k).Val() == "string" {
			held += " " + rdb.Get(t.Context(), k).Val()
		}
		for _, secret := range secrets {
			assert.NotContains(t, held, secret, "key %s", k)
		}
	}
	assert.GreaterOrEqual(t, proofs, 10, "a record per accepted proof of both eras")
	require.NotEmpty(t, secrets)
}

// dpopThroughReplicas runs dpop-client.mjs in era through the front, then
// replays one of its proofs on the other replica. It returns the token, the
// key's thumbprint and the jtis of the proofs accepted.
func dpopThroughReplicas(t *testing.T, node string, front *rrFront, addrs []string, resource, issuer, era, protocol string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "dpop-client.mjs", resource, issuer, oidcClientID, "6", era)
	cmd.Dir = dpopClientDir
	cmd.Env = append(os.Environ(), "OIDC_CLIENT_SECRET="+oidcClientSecret)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "dpop-client.mjs:\n%s\n%s", out, stderr.String())
	line := out[bytes.LastIndex(out, []byte("result "))+len("result "):]
	var result struct{ Thumbprint, TokenType, Protocol string }
	require.NoError(t, json.Unmarshal(bytes.TrimSpace(line), &result), "%s", out)
	assert.Equal(t, "dpop", strings.ToLower(result.TokenType))
	assert.Equal(t, protocol, result.Protocol)

	accepted, per := front.dpopAccepted()
	require.NotEmpty(t, accepted)
	t.Logf("%d requests with DPoP accepted: %d by replica 0, %d by replica 1", len(accepted), per[0], per[1])
	assert.Positive(t, per[0], "replica 0 answered DPoP requests")
	assert.Positive(t, per[1], "replica 1 answered DPoP requests")
	token := strings.TrimPrefix(accepted[0].header.Get("Authorization"), "DPoP ")
	_, claims := unverifiedJWT(t, token)
	assert.Equal(t, map[string]any{"jkt": result.Thumbprint}, claims["cnf"], "the token is bound to the session's key")

	// Replay, exactly, a POST one replica accepted on the other one.
	var replay *rrRecord
	for i := range accepted {
		if accepted[i].method == http.MethodPost {
			replay = &accepted[i]
			break
		}
	}
	require.NotNil(t, replay)
	other := addrs[1-replay.backend]
	before := replicaAuthFailures(t, other)
	send := func(header http.Header) (*http.Response, string) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+other+"/mcp", bytes.NewReader(replay.body))
		require.NoError(t, err)
		req.Header = header
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	resp, body := send(replay.header.Clone())
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "a proof replayed on the other replica: %s", body)
	dpopChallenge := ""
	for _, v := range resp.Header.Values("WWW-Authenticate") {
		if strings.HasPrefix(v, "DPoP ") {
			dpopChallenge = v
		}
	}
	_, params, err := wwwauth.Parse(dpopChallenge)
	require.NoError(t, err, "%q", resp.Header.Values("WWW-Authenticate"))
	assert.Equal(t, "invalid_dpop_proof", params["error"])
	after := replicaAuthFailures(t, other)
	assert.InDelta(t, before["invalid_dpop_proof"]+1, after["invalid_dpop_proof"], 0, "counted on the replica that refused it")

	asBearer := replay.header.Clone()
	asBearer.Set("Authorization", "Bearer "+token)
	asBearer.Del("DPoP")
	resp, body = send(asBearer)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "the bound token as Bearer: %s", body)
	_, params, err = wwwauth.Parse(resp.Header.Get("WWW-Authenticate"))
	require.NoError(t, err)
	assert.Equal(t, "invalid_token", params["error"])

	secrets := []string{token, result.Thumbprint}
	for _, rec := range accepted {
		_, c := unverifiedJWT(t, rec.header.Get("DPoP"))
		jti, _ := c["jti"].(string)
		require.NotEmpty(t, jti)
		secrets = append(secrets, jti)
	}
	return secrets
}

// replicaAuthFailures returns mcp_server_auth_failures_total by reason
// from a replica's /metrics.
func replicaAuthFailures(t *testing.T, addr string) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	out := map[string]float64{}
	for _, l := range strings.Split(string(b), "\n") {
		rest, ok := strings.CutPrefix(l, `mcp_server_auth_failures_total{reason="`)
		if !ok {
			continue
		}
		reason, value, ok := strings.Cut(rest, `"} `)
		if !ok {
			continue
		}
		var f float64
		_, err := fmt.Sscan(value, &f)
		require.NoError(t, err, l)
		out[reason] = f
	}
	return out
}

// dpopKey is a client's DPoP proof key.
type dpopKey struct{ priv *ecdsa.PrivateKey }

func newDPoPKey(t *testing.T) dpopKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	return dpopKey{k}
}

// proof returns a DPoP proof (RFC 9449 §4.2) of method and htu for token,
// with nonce unless "".
func (k dpopKey) proof(t *testing.T, method, htu, token, nonce string) string {
	t.Helper()
	raw, err := k.priv.PublicKey.Bytes() // 0x04 || X || Y
	require.NoError(t, err)
	b64 := base64.RawURLEncoding.EncodeToString
	var jti [16]byte
	_, _ = rand.Read(jti[:])
	ath := sha256.Sum256([]byte(token))
	c := jwt.MapClaims{"jti": b64(jti[:]), "htm": method, "htu": htu, "iat": time.Now().Unix(), "ath": b64(ath[:])}
	if nonce != "" {
		c["nonce"] = nonce
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, c)
	tok.Header["typ"] = "dpop+jwt"
	tok.Header["jwk"] = map[string]any{"kty": "EC", "crv": "P-256", "x": b64(raw[1:33]), "y": b64(raw[33:])}
	s, err := tok.SignedString(k.priv)
	require.NoError(t, err)
	return s
}

// postDPoP posts an initialize with hdr to url and returns the status and
// the WWW-Authenticate challenges, joined.
func postDPoP(t *testing.T, url string, hdr http.Header) (int, string) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"vigil-dpop-test","version":"1"}}}`
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header = hdr
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, strings.Join(resp.Header.Values("WWW-Authenticate"), "\n")
}

// TestDPoPConfig: the nonce key is derived from the cluster key, the same
// on every replica and not the cluster key itself; without one it is random;
// without -auth-dpop-nonces there is none.
func TestDPoPConfig(t *testing.T) {
	a, err := dpopConfig(config{authDPoPNonces: true, clusterKey: testClusterKey, authRequireDPoP: true})
	require.NoError(t, err)
	b, err := dpopConfig(config{authDPoPNonces: true, clusterKey: testClusterKey})
	require.NoError(t, err)
	assert.True(t, a.Required)
	assert.Len(t, a.NonceKey, 32)
	assert.Equal(t, a.NonceKey, b.NonceKey, "every replica derives the same key")
	assert.NotEqual(t, testClusterKey[:32], a.NonceKey, "not the cluster key")
	c, err := dpopConfig(config{authDPoPNonces: true})
	require.NoError(t, err)
	d, err := dpopConfig(config{authDPoPNonces: true})
	require.NoError(t, err)
	assert.Len(t, c.NonceKey, 32)
	assert.NotEqual(t, c.NonceKey, d.NonceKey, "random without a cluster key")
	e, err := dpopConfig(config{clusterKey: testClusterKey})
	require.NoError(t, err)
	assert.Nil(t, e.NonceKey)
	assert.Nil(t, e.Replay, "in memory without -redis")
}
