package egress_test

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/egress"
)

// refusals records what a proxy refused.
type refusals struct {
	mu  sync.Mutex
	got []string
}

func (r *refusals) add(host, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, host+" "+reason)
}

func (r *refusals) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}

// startProxy serves p on a loopback port until the test ends.
func startProxy(t *testing.T, p *egress.Proxy) *url.URL {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- p.Serve(ln) }()
	t.Cleanup(func() {
		_ = ln.Close()
		assert.NoError(t, <-done)
	})
	return &url.URL{Scheme: "http", Host: ln.Addr().String()}
}

// TestProxyReachesOnlyWhatItAllows: a tunnel and a plain request reach
// the one host and port a rule names; another port of that host, the
// proxy itself, a host no rule names, the metadata address and a name
// that resolves to loopback are refused, each reported with its reason.
func TestProxyReachesOnlyWhatItAllows(t *testing.T) {
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "tls ok") }))
	defer tlsSrv.Close()
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "plain ok") }))
	defer plain.Close()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "must not be reached") }))
	defer other.Close()

	tlsAddr, plainAddr := tlsSrv.Listener.Addr().String(), plain.Listener.Addr().String()
	r1, err := egress.ParseRule(tlsAddr)
	require.NoError(t, err)
	r2, err := egress.ParseRule(plainAddr)
	require.NoError(t, err)
	r3, err := egress.ParseRule("localhost:" + portOf(t, other.Listener.Addr().String())) // a name, not an address: loopback refused
	require.NoError(t, err)
	var refused refusals
	proxyURL := startProxy(t, &egress.Proxy{Rules: []egress.Rule{r1, r2, r3, {Host: "*", Port: "80"}}, Refused: refused.add})

	client := tlsSrv.Client()
	client.Transport.(*http.Transport).Proxy = http.ProxyURL(proxyURL)
	get := func(u string) (int, string) {
		resp, err := client.Get(u)
		if err != nil {
			return 0, err.Error()
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := get(tlsSrv.URL)
	assert.Equal(t, 200, code)
	assert.Equal(t, "tls ok", body, "a tunnel to the allowed address")
	code, body = get(plain.URL)
	assert.Equal(t, 200, code)
	assert.Equal(t, "plain ok", body, "a plain request to the allowed address")

	for _, u := range []string{
		other.URL,                        // not allowed: another port of the same host
		"http://" + proxyURL.Host + "/",  // the proxy's own port
		"https://example.invalid:443/",   // no rule
		"http://169.254.169.254/latest/", // metadata: "*:80" allows the port, not the address
		"http://localhost:" + portOf(t, other.Listener.Addr().String()) + "/", // a name resolving to loopback
	} {
		code, body := get(u)
		assert.NotEqual(t, 200, code, "%s: %s", u, body)
		assert.NotContains(t, body, "must not be reached", u)
	}
	got := refused.list()
	require.Len(t, got, 5, "each refusal reported once: %v", got)
	assert.Contains(t, got, "169.254.169.254 address")
	assert.Contains(t, got, "localhost address")
	assert.Contains(t, got, "example.invalid not_allowed")
}

// TestPublic: the addresses a host no rule names may not have.
func TestPublic(t *testing.T) {
	for s, want := range map[string]bool{
		"1.1.1.1": true, "2606:4700::1111": true, "203.0.113.80": true,
		"127.0.0.1": false, "10.1.2.3": false, "172.16.0.1": false, "192.168.1.1": false,
		"169.254.169.254": false, "100.64.0.1": false, "0.0.0.0": false, "::1": false,
		"fe80::1": false, "fd00:ec2::254": false, "::ffff:127.0.0.1": false, "::ffff:10.0.0.1": false,
	} {
		assert.Equal(t, want, egress.Public(netip.MustParseAddr(s)), s)
	}
}

// TestParseRule: what a profile's network entry may be.
func TestParseRule(t *testing.T) {
	for _, s := range []string{"api.github.com:443", "*:443", "*", "[::1]:8080", "10.0.0.5:*"} {
		_, err := egress.ParseRule(s)
		require.NoError(t, err, s)
	}
	for _, s := range []string{"api.github.com", ":443", "host:0", "host:70000", "host:https"} {
		_, err := egress.ParseRule(s)
		assert.Error(t, err, s)
	}
}

func portOf(t *testing.T, addr string) string {
	_, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	return port
}
