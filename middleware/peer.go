package middleware

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// PeerConnContext is a ConnContext function for the http.Server of a
// Streamable HTTP endpoint: it records c's remote address in ctx, once per
// connection, so that the SERVER spans of [WithTracerProvider] get client.address,
// client.port and network.protocol.version. The address is the
// connection's own: a header such as X-Forwarded-For, which any client can
// write, is never read. Chain it with another ConnContext by calling one
// on the other's result.
func PeerConnContext(ctx context.Context, c net.Conn) context.Context {
	p := &peer{conn: c}
	host, port, err := net.SplitHostPort(c.RemoteAddr().String())
	if err != nil {
		return ctx // not an IP address and port: nothing to record
	}
	p.address = host
	p.port, _ = strconv.Atoi(port)
	return context.WithValue(ctx, peerKey{}, p)
}

type peerKey struct{}

// peer is the client end of an HTTP connection; read-only once built.
type peer struct {
	address string
	port    int
	conn    net.Conn
}

// appendPeer adds client.address, client.port and network.protocol.version
// from the connection [PeerConnContext] recorded in ctx, if any.
func appendPeer(ctx context.Context, attrs []attribute.KeyValue) []attribute.KeyValue {
	p, ok := ctx.Value(peerKey{}).(*peer)
	if !ok {
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
