package connect

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"
)

// testConnector returns a Connector of pages only, served under base.
func testConnector(base string) *Connector {
	c := &Connector{
		cfg:    Config{TTL: DefaultTTL, Now: time.Now},
		flows:  localFlows{newPending(DefaultTTL, DefaultMaxPending, DefaultMaxPendingOfOne, nil)},
		signIn: oauth2.Config{ClientID: "gw", Endpoint: oauth2.Endpoint{AuthURL: "https://idp.example/auth"}},
		events: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "events"}, []string{"upstream", "event"}),
		log:    slog.New(slog.DiscardHandler),
	}
	c.SetBase(base)
	return c
}

// The link's cookie: on an https gateway, __Host-vigil-connect-ID, Secure,
// Path=/, no Domain (a sibling host cannot set it); on a loopback http
// gateway, vigil-connect-ID under /connect/, not Secure. The sign-in's
// redirect is accepted with that cookie only: a cookie of the same value
// without the prefix (one a sibling host could have set) is refused.
func TestConnectCookie(t *testing.T) {
	for _, c := range []struct {
		base, name, path string
		secure           bool
	}{
		{"https://gw.example", "__Host-vigil-connect-", "/", true},
		{"http://127.0.0.1:8080", "vigil-connect-", "/connect/", false},
	} {
		conn := testConnector(c.base)
		f := &flow{principal: "alice", upstream: "u"}
		added, err := conn.flows.add(t.Context(), f, time.Now())
		require.NoError(t, err)
		require.True(t, added)
		rec := httptest.NewRecorder()
		conn.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, c.base+"/connect/"+f.id, http.NoBody))
		require.Equal(t, http.StatusFound, rec.Code, c.base)
		cookies := rec.Result().Cookies()
		require.Len(t, cookies, 1, c.base)
		got := cookies[0]
		assert.Equal(t, c.name+f.id, got.Name, c.base)
		assert.Equal(t, c.path, got.Path, c.base)
		assert.Equal(t, c.secure, got.Secure, c.base)
		assert.Empty(t, got.Domain, c.base)
		assert.True(t, got.HttpOnly, c.base)
		require.NoError(t, got.Valid())
		where, err := url.Parse(rec.Header().Get("Location"))
		require.NoError(t, err)
		state := where.Query().Get("state")
		require.NotEmpty(t, state)

		if strings.HasPrefix(c.name, hostPrefix) {
			// The same value without the prefix: refused, and the state is spent.
			r := httptest.NewRequest(http.MethodGet, c.base+"/connect/signin?state="+state, http.NoBody)
			r.AddCookie(&http.Cookie{Name: cookiePrefix + f.id, Value: got.Value})
			rec = httptest.NewRecorder()
			assert.Nil(t, conn.attemptOf(rec, r, false), c.base)
			assert.Equal(t, http.StatusForbidden, rec.Code, c.base)
			rec = httptest.NewRecorder()
			conn.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, c.base+"/connect/"+f.id, http.NoBody))
			require.Equal(t, http.StatusFound, rec.Code, "the link opens again")
			got = rec.Result().Cookies()[0]
			where, err = url.Parse(rec.Header().Get("Location"))
			require.NoError(t, err)
			state = where.Query().Get("state")
		}
		r := httptest.NewRequest(http.MethodGet, c.base+"/connect/signin?state="+state, http.NoBody)
		r.AddCookie(&http.Cookie{Name: got.Name, Value: got.Value})
		assert.NotNil(t, conn.attemptOf(httptest.NewRecorder(), r, false), "%s: the cookie set is the one read", c.base)
	}
}
