package redisshare_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/testkit/redistest"
	"github.com/vigil-mcp/vigil/redisshare"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// TestRecordsExpireOnTheEndpointsTimeouts: with no timeout given to
// redisshare, a session's record in Redis lives for the endpoint's init
// timeout until its client initialized, then for the endpoint's idle
// timeout, as does the session quota's entry; an endpoint whose sessions
// never idle out still leaves them a finite TTL (30 minutes for the
// record, 24 hours for the quota's entry).
func TestRecordsExpireOnTheEndpointsTimeouts(t *testing.T) {
	rs := redistest.Start(t)
	rdb := rs.Client(t)
	for name, tc := range map[string]struct {
		idle, wantIdle, wantQuota time.Duration
	}{
		"idle 47m":   {47 * time.Minute, 47 * time.Minute, 47 * time.Minute},
		"never idle": {0, 30 * time.Minute, 24 * time.Hour},
	} {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, rdb.FlushDB(t.Context()).Err())
			s, err := redisshare.Open(t.Context(), redisshare.Config{URL: rs.URL(), ClusterKey: redistest.ClusterKey()})
			require.NoError(t, err)
			defer func() { assert.NoError(t, s.Close()) }()
			srv := server.New(s.ServerOptions()...)
			defer func() { _ = srv.Close() }()
			const init = 13 * time.Second
			h := streamable.New(srv, append([]streamable.Option{
				streamable.WithIdleTimeout(tc.idle), streamable.WithInitTimeout(init),
				streamable.WithQuotas(streamable.Quotas{Sessions: 10, SessionCounter: s.SessionQuota(10)}),
			}, s.Options()...)...)
			ts := httptest.NewServer(h)
			defer func() { ts.Close(); _ = h.Close() }()

			resp, body := post(t, ts.URL, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+
				protocol.Version20251125+`","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
			require.Equal(t, http.StatusOK, resp.StatusCode, body)
			sid := resp.Header.Get("Mcp-Session-Id")
			require.NotEmpty(t, sid)
			record := onlyKey(t, rdb, "vigil:{*}:s")
			ttl := rdb.PTTL(t.Context(), record).Val()
			assert.True(t, ttl > init-5*time.Second && ttl <= init, "the endpoint's init timeout before initialized: %v", ttl)

			resp, body = post(t, ts.URL, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			require.Equal(t, http.StatusAccepted, resp.StatusCode, body)
			ttl = rdb.PTTL(t.Context(), record).Val()
			assert.True(t, ttl > tc.wantIdle-time.Minute && ttl <= tc.wantIdle, "the endpoint's idle timeout once initialized: %v", ttl)
			quota := rdb.PTTL(t.Context(), onlyKey(t, rdb, "vigil:sessions:*")).Val()
			assert.True(t, quota > tc.wantQuota-time.Minute && quota <= tc.wantQuota, "the quota's entry: %v", quota)
		})
	}
}

// post posts msg to the endpoint at url, on session sid ("" for none),
// and returns the response and its body.
func post(t *testing.T, url, sid, msg string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(msg))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("MCP-Protocol-Version", protocol.Version20251125)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(body)
}

// onlyKey returns the one key of Redis that matches pattern.
func onlyKey(t *testing.T, rdb *redis.Client, pattern string) string {
	t.Helper()
	keys, err := rdb.Keys(t.Context(), pattern).Result()
	require.NoError(t, err)
	require.Len(t, keys, 1, "keys %s", pattern)
	return keys[0]
}
