package mcptest

import (
	"net/http"
	"testing"

	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// DialHTTP returns a Conn for the Streamable HTTP endpoint at url (the
// URL of an [net/http/httptest.Server], say), sending with client, or with
// a client of its own when nil: the client connection of
// [streamable.Dial], which Vigil's gateway uses too. No request is sent
// yet. Write POSTs each message, and Read returns the messages of the
// answers, JSON or SSE, and of the GET stream opened after
// notifications/initialized; an HTTP error status answers its request
// with an error. The Conn is a [transport.SessionIDer] (empty before the
// answer to initialize), and is closed when the test ends: its session
// is deleted and every stream abandoned.
func DialHTTP(t testing.TB, url string, client *http.Client) transport.Conn {
	t.Helper()
	c := streamable.Dial(streamable.ClientConfig{URL: url, Client: client})
	t.Cleanup(func() { _ = c.Close() })
	return c
}
