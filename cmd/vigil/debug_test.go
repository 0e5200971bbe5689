package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A 2026-07-28 stateless request in flight shows on the debug page with
// its era, next to a 2025 session.
func TestServiceDebugPageStatelessEra(t *testing.T) {
	svc := startService(t, "-http", "127.0.0.1:0")
	hc := &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}
	defer hc.CloseIdleConnections()
	c := &svcClient{hc: hc, url: svc.base + "/mcp"}
	_, err := c.rpc(`1`, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"era-test","version":"1"}}`)
	require.NoError(t, err)

	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":1500},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, err := http.NewRequest(http.MethodPost, svc.base+"/mcp", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", "sleep")
	answered := make(chan error, 1)
	go func() {
		resp, err := hc.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
		answered <- err
	}()
	var snap debugSnapshot
	svcEventually(t, "the stateless sleep in flight", 10*time.Second, func() (bool, error) {
		var err error
		snap, err = svcDebug(hc, svc.base)
		return err == nil && len(snap.InFlight) == 1, err
	})
	eras := map[string]string{}
	for _, s := range snap.Sessions {
		eras[s.ID] = s.Era
	}
	assert.Equal(t, "2025 session", eras[c.session])
	assert.Equal(t, "2026 stateless", eras[snap.InFlight[0].SessionID])
	for _, s := range snap.Sessions {
		assert.Equal(t, "streamable_http", s.Transport, s.Era)
	}
	assert.Equal(t, "tools/call sleep", snap.InFlight[0].Key)
	require.NoError(t, <-answered)
}
