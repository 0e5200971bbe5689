package main

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestUserAccountAdminListener (issue 88, A1): vigil with user-mode
// upstreams and -admin-http 0.0.0.0 warns at start that the admin
// listener serves any user's connections, listed and revoked; on it, a
// browser's cross-site form posting a revocation is refused 403 and
// logged with its cause, and alice's connection stays; the operator's own
// POST (no browser headers) revokes it.
func TestUserAccountAdminListener(t *testing.T) {
	port := authResource(t)
	r := startUserParties(t, strings.TrimSuffix(port.resource, "/mcp"), port.resource, 0)
	r.v = startVigilAuth(t, port, r.idp.Issuer(), r.env(), append(r.flags(), "-admin-http", "0.0.0.0:0")...)
	alice := r.token(t, userAccounts[0])
	r.connect(t, asked(t, r.call2026(t, alice, "whoami", `{}`)), "alice")
	require.Equal(t, "subject=alice", resultText(t, r.call2026(t, alice, "whoami", `{}`)))

	logs := r.v.logs.String()
	assert.Contains(t, logs, "level=WARN msg=\"the admin listener is reachable beyond this host, with no authorization, and serves the accounts of -upstream-auth NAME=user: "+
		"GET /admin/connections lists any user's connections", "the warning names what the listener serves")
	m := regexp.MustCompile(`msg="serving admin endpoints" url=http://\S+:(\d+) `).FindStringSubmatch(logs)
	require.NotNil(t, m, "%s", logs)
	admin := "http://127.0.0.1:" + m[1]

	who := url.Values{"issuer": {r.idp.Issuer()}, "subject": {"alice"}, "upstream": {"u"}}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, admin+"/admin/connections/revoke?"+who.Encode(), http.NoBody)
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "http://attacker.example")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	resp, err := r.v.hc.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "a cross-site form")
	assert.Equal(t, "subject=alice", resultText(t, r.call2026(t, alice, "whoami", `{}`)), "her connection stays")
	assert.NotContains(t, r.as.out.String(), "POST /token/revocation", "nothing revoked")

	resp, err = r.v.hc.Post(admin+"/admin/connections/revoke?"+who.Encode(), "", nil)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "the operator's own request")
	asked(t, r.call2026(t, alice, "whoami", `{}`))
	assert.True(t, r.v.logs.waitFor(`msg="connect: admin: a cross-origin browser request refused: a web page, not the operator, sent it" `+
		`method=POST path=/admin/connections/revoke origin=http://attacker.example sec_fetch_site=cross-site cause="cross-origin request detected`, 10*time.Second),
		"the refusal is logged with its cause (the log is written asynchronously)")
}
