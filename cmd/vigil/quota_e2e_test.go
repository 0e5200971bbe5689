package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
)

// quotaClient returns an HTTP client whose connections come from the
// loopback address ip, so that vigil sees it as the caller ip.
func quotaClient(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 256}, Timeout: time.Minute}
}

const quotaInitParams = `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"quota-test","version":"1"}}`

// quotaErrorData decodes a JSON-RPC error's data.quota and retryAfterSeconds.
type quotaErrorData struct {
	Error *struct {
		Code int64 `json:"code"`
		Data struct {
			Quota             string `json:"quota"`
			RetryAfterSeconds int    `json:"retryAfterSeconds"`
		} `json:"data"`
	} `json:"error"`
}

// The shipped vigil, with its defaults and no quota flag: caller A
// (127.0.0.1) opens sessions until refused (429, Retry-After, data.quota
// "sessions"), then holds long calls of the sleep tool until refused
// (-32000 at once, data.quota "tool_share"); caller B (127.0.0.2) still
// opens a session and its sleep call is admitted at once; the refusals are
// counted by quota.
func TestQuotaE2EDefaults(t *testing.T) {
	svc := startService(t, "-http", "127.0.0.1:0")
	hcA, hcB := quotaClient("127.0.0.1"), quotaClient("127.0.0.2")
	defer hcA.CloseIdleConnections()
	defer hcB.CloseIdleConnections()
	mcpURL := svc.base + "/mcp"

	// A: sessions until refused.
	var sessions []*svcClient
	var refused *http.Response
	for i := 0; refused == nil; i++ {
		require.Less(t, i, defaultQuotaSessions+1, "A was never refused a session")
		c := &svcClient{hc: hcA, url: mcpURL}
		resp, err := c.post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":` + quotaInitParams + `}`)
		require.NoError(t, err)
		if resp.StatusCode != http.StatusOK {
			refused = resp
			break
		}
		c.session = resp.Header.Get("Mcp-Session-Id")
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		sessions = append(sessions, c)
	}
	body, err := io.ReadAll(refused.Body)
	_ = refused.Body.Close()
	require.NoError(t, err)
	assert.Len(t, sessions, defaultQuotaSessions)
	assert.Equal(t, http.StatusTooManyRequests, refused.StatusCode, "%s", body)
	assert.NotEmpty(t, refused.Header.Get("Retry-After"))
	var data quotaErrorData
	require.NoError(t, json.Unmarshal(body, &data), "%s", body)
	require.NotNil(t, data.Error)
	assert.Equal(t, "sessions", data.Error.Data.Quota)
	assert.Equal(t, refused.Header.Get("Retry-After"), strconv.Itoa(data.Error.Data.RetryAfterSeconds))

	// A: long calls of sleep, spread over 8 of its sessions, up to its
	// share of the tool's slots (half of -tool-concurrency's 256).
	share := int(256 * defaultQuotaToolShare)
	var wg sync.WaitGroup
	defer wg.Wait()
	for i := range share {
		c := sessions[i%8]
		wg.Go(func() {
			// Ends when vigil is killed at the end of the test.
			_, _ = c.rpc(strconv.Itoa(100+i), "tools/call", `{"name":"sleep","arguments":{"ms":40000}}`)
		})
	}
	defer func() { _ = svc.cmd.Process.Kill() }() // before wg.Wait
	require.NoError(t, waitInFlight(t.Context(), hcB, svc.base+"/metrics", share))
	t0 := time.Now()
	over, err := sessions[9].rpc(`7`, "tools/call", `{"name":"sleep","arguments":{"ms":1}}`)
	require.NoError(t, err)
	require.NotNil(t, over.Error, "A over its share of sleep's slots")
	assert.Equal(t, int64(-32000), over.Error.Code)
	assert.Contains(t, over.Error.Message, "tool_share")
	assert.Less(t, time.Since(t0), 900*time.Millisecond, "refused at once, not after the 1s slot wait")

	// B: a session, and its call of the same tool admitted at once.
	b := &svcClient{hc: hcB, url: mcpURL}
	_, err = b.rpc(`1`, "initialize", quotaInitParams)
	require.NoError(t, err, "B opens a session while A holds its quota")
	t0 = time.Now()
	res, err := b.rpc(`2`, "tools/call", `{"name":"sleep","arguments":{"ms":1}}`)
	require.NoError(t, err)
	require.Nil(t, res.Error, "B's call is admitted")
	assert.Less(t, time.Since(t0), 900*time.Millisecond, "admitted at once")

	families := svcMetrics(t, hcB, svc.base)
	for quota, want := range map[string]float64{"sessions": 1, "tool_share": 1, "in_flight": 0, "tasks": 0} {
		m := svcSample(t, families, mcpconv.MetricQuotaRefusals, map[string]string{mcpconv.LabelQuota: quota})
		assert.InDelta(t, want, m.GetCounter().GetValue(), 0, "refusals of quota %s", quota)
	}
}
