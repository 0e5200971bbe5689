package main

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/testkit/redistest"
)

// frontDoor is the gateway's one public URL in front of its replicas, as
// a load balancer without session affinity: each request of a browser
// goes to the replica the test names for its path (the link, the sign-in
// redirect, the callback), and it records which replica served which.
type frontDoor struct {
	url    string
	mu     sync.Mutex
	routes map[string]string // "/connect/signin", "/connect/callback", "/connect/" (a link): a replica's host:port
	served []string          // "path replica", in order
}

func startFrontDoor(t *testing.T) *frontDoor {
	t.Helper()
	d := &frontDoor{routes: map[string]string{}}
	proxy := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		route := pr.In.URL.Path
		if route != "/connect/signin" && route != "/connect/callback" {
			route = "/connect/"
		}
		d.mu.Lock()
		to := d.routes[route]
		d.served = append(d.served, route+" "+to)
		d.mu.Unlock()
		pr.SetURL(&url.URL{Scheme: "http", Host: to})
	}}
	ts := httptest.NewServer(proxy)
	t.Cleanup(ts.Close)
	d.url = ts.URL
	return d
}

func (d *frontDoor) route(path, replica string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.routes[path] = replica
}

func (d *frontDoor) log() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.served...)
}

// startUserReplicas starts replicas of vigil -redis (one redis-server)
// with the user mode of r, behind r's public URL base, and returns a
// userRig on each.
func startUserReplicas(t *testing.T, r *userRig, resource string, replicas int) []*userRig {
	t.Helper()
	rs := redistest.Start(t)
	env := append(r.env(), "VIGIL_CLUSTER_KEY="+testClusterKeyB64, "VIGIL_REQUEST_STATE_KEY=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=")
	on := make([]*userRig, replicas)
	for i := range on {
		port := authResource(t) // the replica's own address; its resource is the front door's
		args := append([]string{"-auth-resource", resource, "-redis", rs.URL()}, r.flags()...)
		on[i] = &userRig{
			v: startVigilAuth(t, port, r.idp.Issuer(), env, args...), spans: r.spans, idp: r.idp, as: r.as, up: r.up,
			base: r.base, secretFile: r.secretFile,
		}
	}
	return on
}

// hostOf returns the host:port of the replica of rig.
func hostOf(t *testing.T, rig *userRig) string {
	t.Helper()
	u, err := url.Parse(rig.v.url)
	require.NoError(t, err)
	return u.Host
}

// TestUserAccountReplicas: three vigil replicas on one Redis behind one
// public URL, with no affinity. alice's first call, on replica A, gets a
// URL elicitation; her browser opens the link on B, comes back from the
// gateway's identity provider to C and from the upstream's authorization
// server to B: the flow made on A completes. Then 20 of 20 calls on each
// replica reach the upstream as alice (her stored token, read from
// Redis). Once the access token is due for refresh, concurrent calls on
// the three replicas refresh it once: one refresh counted over the
// replicas' /metrics, one token endpoint request at the authorization
// server beyond the code's, and the upstream saw two tokens of alice.
func TestUserAccountReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("three replicas: skipped with -short")
	}
	const ttl = 16 * time.Second // refreshed 8 s before it expires (half its life)
	front := startFrontDoor(t)
	resource := front.url + "/mcp"
	parties := startUserParties(t, front.url, resource, ttl)
	rigs := startUserReplicas(t, parties, resource, 3)
	a, b, c := rigs[0], rigs[1], rigs[2]
	status, tok := parties.idp.TokenFor(t, userAccounts[0], resource, "vigil.read")
	require.Equal(t, http.StatusOK, status)
	alice := tok.AccessToken

	m := a.call2026(t, alice, "whoami", `{}`)
	e := asked(t, m)
	require.True(t, strings.HasPrefix(e.URL, front.url+"/connect/"), "the link is the public URL's: %s", e.URL)
	front.route("/connect/", hostOf(t, b))
	front.route("/connect/signin", hostOf(t, c))
	front.route("/connect/callback", hostOf(t, b))
	connected := time.Now()
	parties.connect(t, e, "alice")
	assert.Equal(t, []string{
		"/connect/ " + hostOf(t, b), "/connect/signin " + hostOf(t, c), "/connect/callback " + hostOf(t, b),
	}, front.log(), "made on A, opened on B, signed in on C, called back on B")

	counts := map[string]int{}
	for _, rig := range rigs {
		s := rig.v.session(t, alice)
		for range 10 {
			counts[hostOf(t, rig)+" "+resultText(t, rig.call2026(t, alice, "whoami", `{}`))]++
			counts[hostOf(t, rig)+" "+resultText(t, call2025(t, s, "whoami", nil))]++
		}
	}
	require.Less(t, time.Since(connected), ttl/2, "the calls before the refresh took too long for the test's timing")
	assert.Equal(t, map[string]int{
		hostOf(t, a) + " subject=alice": 20, hostOf(t, b) + " subject=alice": 20, hostOf(t, c) + " subject=alice": 20,
	}, counts)
	refreshes := func() int64 {
		var n int64
		for _, rig := range rigs {
			n += scrapeSum(t, hostOf(t, rig), "mcp_gateway_account_refreshes_total")
		}
		return n
	}
	assert.Zero(t, refreshes(), "no refresh yet")
	assert.Len(t, tokensOf(t, parties.up.seen(), "alice"), 1, "one token of alice so far")

	// The token is due (8 s before its expiry): wait for the time to
	// pass, then call on the three replicas at once.
	time.Sleep(time.Until(connected.Add(ttl/2 + time.Second))) // a token's age, not an order between goroutines
	start := make(chan struct{})
	var wg sync.WaitGroup
	got := make(chan string, 3*4)
	for _, rig := range rigs {
		for range 4 {
			wg.Go(func() {
				<-start
				got <- resultText(t, rig.call2026(t, alice, "whoami", `{}`))
			})
		}
	}
	close(start)
	wg.Wait()
	close(got)
	for text := range got {
		assert.Equal(t, "subject=alice", text)
	}
	for _, rig := range rigs {
		assert.Equal(t, "subject=alice", resultText(t, rig.call2026(t, alice, "whoami", `{}`)), "after the refresh")
	}
	assert.Equal(t, int64(1), refreshes(), "one refresh over the three replicas")
	var failures int64
	for _, rig := range rigs {
		failures += scrapeSum(t, hostOf(t, rig), "mcp_gateway_account_refresh_failures_total")
	}
	assert.Zero(t, failures)
	assert.Len(t, tokensOf(t, parties.up.seen(), "alice"), 2, "alice's first token, then the refreshed one")

	// bob's requestState, made on A, is accepted once over the replicas:
	// its retry on B asks again (-32042), its replay on C is refused.
	status, tok = parties.idp.TokenFor(t, userAccounts[1], resource, "vigil.read")
	require.Equal(t, http.StatusOK, status)
	bob := tok.AccessToken
	const caps = `{"elicitation":{"url":{}}}`
	_, retry := inputRound(t, a.call2026With(t, bob, "whoami", `{}`, caps, ""))
	asked(t, b.call2026With(t, bob, "whoami", `{}`, caps, retry))
	refusedState(t, c, bob, caps, retry, "replayed on another replica")

	t.Logf("front door: %v; calls before the refresh: %v; refreshes over the replicas: %d", front.log(), counts, refreshes())
}

// tokensOf returns the distinct JWTs of s whose sub is sub (the upstream
// also sees each replica's own client_credentials tokens).
func tokensOf(t *testing.T, s []string, sub string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, v := range s {
		parts := strings.Split(v, ".")
		require.Len(t, parts, 3, "a JWT")
		payload, err := base64.RawURLEncoding.DecodeString(parts[1])
		require.NoError(t, err)
		var claims struct{ Sub string }
		require.NoError(t, json.Unmarshal(payload, &claims))
		if claims.Sub == sub {
			out[v] = true
		}
	}
	return out
}
