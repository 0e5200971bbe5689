package mcptest

import (
	"context"

	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// defaultProtocolVersion is the protocol version [Client.Initialize] asks
// for when it is given none, and that [Connect] asks for.
const defaultProtocolVersion = protocol.Version20251125

// Option configures a [Client]; a nil Option is ignored.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	caps       any
	name, ver  string
	onRequest  func(context.Context, *transport.Request) (any, error) // WithRequestHandler
	serveCtx   context.Context
	serverConn func(transport.Conn) transport.Conn
}

func newConfig(opts []Option) config {
	c := config{name: "mcptest", ver: "1", serveCtx: context.Background()}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	return c
}

// WithRequestHandler sets how the client answers the requests the server
// sends it (ping, roots/list, sampling/createMessage, ...) while a typed
// call or [Client.Call] waits for its answer: h returns the result, or an
// error: a *[transport.Error] is sent as is, any other error as an
// internal error (-32603) with its text; it runs on the test's goroutine.
// Without it, ping gets an empty result and every other method a
// method-not-found error (-32601), as from a client that declared no
// capabilities. A nil h restores that default.
func WithRequestHandler(h func(ctx context.Context, req *transport.Request) (result any, err error)) Option {
	return optionFunc(func(c *config) { c.onRequest = h })
}

// WithCapabilities sets the client capabilities [Client.Initialize]
// declares when it is given none (and that [Connect] declares), for example
// map[string]any{"elicitation": map[string]any{}}. The default is {}.
func WithCapabilities(caps any) Option {
	return optionFunc(func(c *config) { c.caps = caps })
}

// WithClientInfo sets the clientInfo of initialize. The default is
// {"name": "mcptest", "version": "1"}.
func WithClientInfo(name, version string) Option {
	return optionFunc(func(c *config) { c.name, c.ver = name, version })
}

// WithServeContext sets the context [Pipe] and [Connect] pass to the
// server's Serve. The default is [context.Background]; a nil ctx keeps it.
func WithServeContext(ctx context.Context) Option {
	return optionFunc(func(c *config) {
		if ctx != nil {
			c.serveCtx = ctx
		}
	})
}

// WithServerConn makes [Pipe] and [Connect] serve wrap(end) instead of the
// server's end of the pipe, for tests that observe or break what the
// server writes. wrap runs once, before Serve starts.
func WithServerConn(wrap func(transport.Conn) transport.Conn) Option {
	return optionFunc(func(c *config) { c.serverConn = wrap })
}
