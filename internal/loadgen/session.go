package loadgen

import (
	"fmt"
	"io"
	"net/http"
)

// OpenSession opens a 2025-era MCP session at url (initialize with
// protocolVersion, then notifications/initialized) and returns its
// Mcp-Session-Id. Requests in the session carry that id and the version
// in their headers (see [SessionPost]). A server that keeps no sessions
// (a stateless one, such as mcp-go's in its stateless mode) answers
// without an id: OpenSession then returns "", and requests carry none.
func OpenSession(client *http.Client, url, protocolVersion string) (string, error) {
	resp, err := client.Do(Post(url, fmt.Appendf(nil,
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"loadgen","version":"1"}}}`,
		protocolVersion)))
	if err != nil {
		return "", err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("initialize: %s, session %q", resp.Status, sid)
	}
	if resp, err = client.Do(SessionPost(url, sid, protocolVersion, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))); err != nil {
		return "", err
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		return "", fmt.Errorf("notifications/initialized: %s", resp.Status)
	}
	return sid, nil
}

// SessionPost is [Post] within the session sid of protocolVersion.
func SessionPost(url, sid, protocolVersion string, body []byte) *http.Request {
	req := Post(url, body)
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	req.Header.Set("MCP-Protocol-Version", protocolVersion)
	return req
}
