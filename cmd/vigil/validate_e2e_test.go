package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/transport/protocol"
)

// TestSleepArgumentsValidated: sleep declares additionalProperties false,
// so a call with an extra member (3 MiB of padding) is a tool error in a
// 2025-11-25 session and in a 2026-07-28 request alike: its text names the
// member and is bounded, sleep never runs (it was asked for a minute, and
// the answer comes at once), and /metrics counts the call with error_type
// invalid_arguments, its duration in its era's series.
func TestSleepArgumentsValidated(t *testing.T) {
	base := runInProcess(t)
	hc := &http.Client{Transport: &http.Transport{}, Timeout: 20 * time.Second}
	t.Cleanup(hc.CloseIdleConnections)
	post := func(body string, header map[string]string) (*http.Response, []byte) {
		req, err := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := hc.Do(req)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp, b
	}

	resp, _ := post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"`+protocol.Version20251125+`","capabilities":{},"clientInfo":{"name":"validate","version":"1"}}}`, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	session := map[string]string{"Mcp-Session-Id": resp.Header.Get("Mcp-Session-Id"), "MCP-Protocol-Version": protocol.Version20251125}
	resp, _ = post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, session)
	require.Equal(t, http.StatusAccepted, resp.StatusCode)

	pad := strings.Repeat("x", 3<<20)
	args := `{"ms":60000,"pad":"` + pad + `"}`
	meta2026 := `,"_meta":{"io.modelcontextprotocol/protocolVersion":"` + protocol.Version20260728 +
		`","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"validate","version":"1"}}`
	eras := []struct {
		name   string
		meta   string
		header map[string]string
	}{
		{"2025-11-25", "", session},
		{"2026-07-28", meta2026, map[string]string{"MCP-Protocol-Version": protocol.Version20260728, "Mcp-Method": "tools/call", "Mcp-Name": "sleep"}},
	}
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			for _, tt := range []struct{ args, want string }{
				{args, `invalid arguments for tool "sleep": additionalProperties: unexpected property "pad"`},
				{`{"ms":"10"}`, `invalid arguments for tool "sleep": /ms: type: "10" has type "string", want "integer"`},
				{`{}`, `invalid arguments for tool "sleep": required: missing property "ms"`},
			} {
				start := time.Now()
				resp, body := post(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"sleep","arguments":`+tt.args+era.meta+`}}`, era.header)
				require.Equal(t, http.StatusOK, resp.StatusCode, "%.300s", body)
				assert.Less(t, time.Since(start), 10*time.Second, "sleep did not run")
				if i := bytes.Index(body, []byte("data: ")); i >= 0 { // an SSE answer: its one event
					body = bytes.TrimSpace(body[i+len("data: "):])
				}
				var answer struct {
					Result struct {
						Content []struct{ Text string } `json:"content"`
						IsError bool                    `json:"isError"`
					} `json:"result"`
				}
				require.NoError(t, json.Unmarshal(body, &answer), "%.300s", body)
				assert.True(t, answer.Result.IsError)
				require.Len(t, answer.Result.Content, 1)
				assert.Equal(t, tt.want, answer.Result.Content[0].Text)
				assert.Less(t, len(body), 1024, "the client's 3 MiB are not echoed back")
			}
		})
	}

	metrics, err := hc.Get(base + "/metrics")
	require.NoError(t, err)
	defer func() { _ = metrics.Body.Close() }()
	exposition, err := io.ReadAll(metrics.Body)
	require.NoError(t, err)
	var refused, ended []string
	for line := range strings.Lines(string(exposition)) {
		moved := strings.Contains(line, `gen_ai_tool_name="sleep"`) && !strings.HasSuffix(strings.TrimSpace(line), " 0") // not a series made ready at start
		switch {
		case moved && strings.HasPrefix(line, "mcp_server_operation_duration_seconds_count{"):
			refused = append(refused, line)
		case moved && strings.HasPrefix(line, "mcp_server_requests_finished_total{"):
			ended = append(ended, line)
		}
	}
	require.Len(t, refused, 2, "one duration series per era (the protocol version label): %q", refused)
	for _, line := range refused {
		assert.True(t, strings.HasSuffix(strings.TrimSpace(line), " 3"), line)
	}
	require.Len(t, ended, 1, "one end of both eras' calls: %q", ended)
	assert.Contains(t, ended[0], `error_type="invalid_arguments"`)
	assert.Contains(t, ended[0], `outcome="ok"`)
	assert.True(t, strings.HasSuffix(strings.TrimSpace(ended[0]), " 6"), ended[0])
}
