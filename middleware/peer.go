package middleware

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/vigil-mcp/vigil/internal/connstate"
)

type peerKey struct{}

// peer is the client end of an HTTP connection; read-only once built.
type peer struct {
	address string // "" when the remote address is not an IP address and port
	port    int
	conn    net.Conn
}

// peerOf parses c's remote address, once per connection.
func peerOf(c net.Conn) any {
	p := &peer{conn: c}
	if c == nil {
		return p
	}
	host, port, err := net.SplitHostPort(c.RemoteAddr().String())
	if err != nil {
		return p // not an IP address and port: nothing to record
	}
	p.address = host
	p.port, _ = strconv.Atoi(port)
	return p
}

// appendPeer adds client.address, client.port and network.protocol.version
// from the connection [streamable.ConnContext] recorded in ctx, if any.
func appendPeer(ctx context.Context, attrs []attribute.KeyValue) []attribute.KeyValue {
	st := connstate.From(ctx)
	if st == nil {
		return attrs
	}
	p := st.Value(peerKey{}, peerOf).(*peer)
	if p.address == "" {
		return attrs
	}
	attrs = append(attrs, semconv.ClientAddress(p.address))
	if p.port > 0 {
		attrs = append(attrs, semconv.ClientPort(p.port))
	}
	if v := httpVersion(ctx, p.conn); v != "" {
		attrs = append(attrs, semconv.NetworkProtocolVersion(v))
	}
	return attrs
}

// httpVersion returns the HTTP version spoken on c: over TLS, what ALPN
// chose ("2" for h2, else "1.1"); in clear text "1.1", as net/http speaks
// unless its server allows unencrypted HTTP/2, when it is unknown ("").
func httpVersion(ctx context.Context, c net.Conn) string {
	if t, ok := c.(*tls.Conn); ok {
		if t.ConnectionState().NegotiatedProtocol == "h2" {
			return "2"
		}
		return "1.1"
	}
	if s, ok := ctx.Value(http.ServerContextKey).(*http.Server); ok && s.Protocols != nil && s.Protocols.UnencryptedHTTP2() {
		return ""
	}
	return "1.1"
}
