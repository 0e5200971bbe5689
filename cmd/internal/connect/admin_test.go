package connect

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A browser's cross-origin POST to the admin endpoints (a page the
// operator opened, posting a revocation form to her loopback port) is
// refused 403, its cause logged; the operator's own requests (no browser
// headers, or the listener's own origin) reach the handler, which answers
// 503 here as no upstream is mounted.
func TestAdminRefusesCrossOrigin(t *testing.T) {
	var logs bytes.Buffer
	h := AdminHandler(func() *Connector { return nil }, slog.New(slog.NewTextHandler(&logs, nil)))
	const revoke = "http://127.0.0.1:9090/admin/connections/revoke?issuer=i&subject=s&upstream=u"
	for _, c := range []struct {
		name    string
		headers map[string]string
		status  int
	}{
		{"cross-site form", map[string]string{"Origin": "http://attacker.example", "Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"same-site page", map[string]string{"Origin": "http://other.127.0.0.1.nip.io", "Sec-Fetch-Site": "same-site"}, http.StatusForbidden},
		{"Origin alone, another host", map[string]string{"Origin": "http://attacker.example"}, http.StatusForbidden},
		{"curl", nil, http.StatusServiceUnavailable},
		{"the listener's own page", map[string]string{"Origin": "http://127.0.0.1:9090", "Sec-Fetch-Site": "same-origin"}, http.StatusServiceUnavailable},
	} {
		logs.Reset()
		req := httptest.NewRequest(http.MethodPost, revoke, http.NoBody)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range c.headers {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		assert.Equal(t, c.status, rec.Code, c.name)
		if c.status == http.StatusForbidden {
			assert.Contains(t, logs.String(), "level=WARN msg=\"connect: admin: a cross-origin browser request refused", c.name)
			assert.Contains(t, logs.String(), "path=/admin/connections/revoke", c.name)
			assert.Contains(t, logs.String(), "origin="+c.headers["Origin"], c.name)
			assert.Contains(t, logs.String(), "cause=", c.name)
		} else {
			assert.Empty(t, logs.String(), c.name)
		}
	}
	// A GET lists and changes nothing: a cross-site one is served (it
	// cannot read the answer across origins).
	req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:9090/admin/connections?issuer=i&subject=s", http.NoBody)
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
}
