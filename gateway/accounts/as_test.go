package accounts_test

import (
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"

	"github.com/vigil-mcp/vigil/gateway/accounts"
)

// testAS is a real token endpoint (RFC 6749 refresh_token grant, with
// rotation: each refresh token is good once) and revocation endpoint (RFC
// 7009), for the client testClientID/testClientSecret, issuing tokens for
// testResource only.
type testAS struct {
	expiresIn int // seconds

	mu        sync.Mutex
	refresh   map[string]bool // the refresh tokens still good
	issued    []string        // every token issued
	revoked   []string        // token_type_hint, token
	refreshes int             // refreshes granted
	entered   int             // refresh requests received
	gate      chan struct{}   // when not nil, a refresh waits for it to close
	status    int             // when not 0, the token endpoint answers it
	onEnter   chan struct{}   // when not nil, gets a value per refresh request (never blocks)
	jwtAccess bool            // its access tokens are JWTs it revokes none of (RFC 7009 unsupported_token_type)
}

const (
	testClientID     = "vigil-gateway"
	testClientSecret = "gateway-secret"
	testResource     = "https://upstream.example/mcp"
	testUpstream     = "github"
)

func newTestAS(expiresIn int) *testAS {
	return &testAS{expiresIn: expiresIn, refresh: make(map[string]bool)}
}

// client returns the vault's Client of the AS served at base.
func (a *testAS) client(base string) accounts.Client {
	return accounts.Client{
		TokenURL: base + "/token", RevocationURL: base + "/revoke",
		ClientID: testClientID, ClientSecret: testClientSecret, Resource: testResource,
		Scopes: []string{"repo"}, AuthStyle: oauth2.AuthStyleInHeader,
	}
}

// inProcess returns an HTTP client that serves its requests with the
// AS's handler, without a network (for synctest bubbles).
func (a *testAS) inProcess() *http.Client {
	return &http.Client{Transport: handlerTransport{a}}
}

type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, r)
	return rec.Result(), nil
}

// authorize returns the tokens of a completed authorization (what a code
// exchange gives).
func (a *testAS) authorize() *oauth2.Token {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.issueLocked()
}

func (a *testAS) issueLocked() *oauth2.Token {
	at, rt := "at-"+rand.Text(), "rt-"+rand.Text()
	a.refresh[rt] = true
	a.issued = append(a.issued, at, rt)
	tok := &oauth2.Token{AccessToken: at, RefreshToken: rt, TokenType: "Bearer", ExpiresIn: int64(a.expiresIn)}
	return tok.WithExtra(map[string]any{"scope": "repo read:org"})
}

func (a *testAS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id, secret, ok := r.BasicAuth()
	if r.Method != http.MethodPost || !ok || id != testClientID || secret != testClientSecret {
		writeOAuthError(w, http.StatusUnauthorized, "invalid_client", "")
		return
	}
	_ = r.ParseForm()
	switch r.URL.Path {
	case "/revoke":
		a.mu.Lock()
		a.revoked = append(a.revoked, r.PostForm.Get("token_type_hint"), r.PostForm.Get("token"))
		jwtAccess := a.jwtAccess
		a.mu.Unlock()
		if jwtAccess && r.PostForm.Get("token_type_hint") == "access_token" {
			writeOAuthError(w, http.StatusBadRequest, "unsupported_token_type", "")
		}
	case "/token":
		a.serveRefresh(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (a *testAS) serveRefresh(w http.ResponseWriter, r *http.Request) {
	if r.PostForm.Get("grant_type") != "refresh_token" {
		writeOAuthError(w, http.StatusBadRequest, "unsupported_grant_type", "")
		return
	}
	if r.PostForm.Get("resource") != testResource {
		writeOAuthError(w, http.StatusBadRequest, "invalid_target", "")
		return
	}
	a.mu.Lock()
	a.entered++
	gate, status := a.gate, a.status
	if a.onEnter != nil {
		select {
		case a.onEnter <- struct{}{}:
		default:
		}
	}
	a.mu.Unlock()
	if gate != nil {
		<-gate
	}
	rt := r.PostForm.Get("refresh_token")
	if status != 0 {
		writeOAuthError(w, status, "temporarily_unavailable", "cannot refresh "+rt)
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.refresh[rt] {
		// The description repeats the token, as careless servers do: the
		// vault must not repeat it.
		writeOAuthError(w, http.StatusBadRequest, "invalid_grant", "refresh token "+rt+" is not valid")
		return
	}
	delete(a.refresh, rt) // rotation: good once
	a.refreshes++
	tok := a.issueLocked()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"access_token": tok.AccessToken, "refresh_token": tok.RefreshToken, "token_type": "Bearer",
		"expires_in": a.expiresIn, "scope": "repo read:org",
	})
}

func writeOAuthError(w http.ResponseWriter, status int, code, desc string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": desc})
}

// counts returns the refreshes granted and the refresh requests received.
func (a *testAS) counts() (granted, entered int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.refreshes, a.entered
}

// hold makes the next refreshes wait until the returned func runs.
func (a *testAS) hold() (release func()) {
	gate := make(chan struct{})
	a.mu.Lock()
	a.gate = gate
	a.mu.Unlock()
	return sync.OnceFunc(func() {
		a.mu.Lock()
		a.gate = nil
		a.mu.Unlock()
		close(gate)
	})
}

// metricValue returns the value of the metric name with labels in reg
// (0 when absent), a count.
func metricValue(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) int {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if matches(m, labels) {
				switch {
				case m.Counter != nil:
					return int(m.Counter.GetValue())
				case m.Gauge != nil:
					return int(m.Gauge.GetValue())
				}
			}
		}
	}
	return 0
}

func matches(m *dto.Metric, labels map[string]string) bool {
	n := 0
	for _, l := range m.GetLabel() {
		if v, ok := labels[l.GetName()]; ok {
			if v != l.GetValue() {
				return false
			}
			n++
		}
	}
	return n == len(labels)
}
