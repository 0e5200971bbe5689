package streamable

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/vigil-mcp/vigil/transport"
)

// probeWithin bounds the request that asks whether a server whose
// stream broke can still be reached.
const probeWithin = 5 * time.Second

// reachable reports whether the server still answers HTTP, after the
// stream of a call broke (why) other than by ending (a clean end is the
// server's: it wants to be polled); see unreachable.
func (c *clientConn) reachable(ctx context.Context, why error) bool {
	if errors.Is(why, io.EOF) || errors.Is(why, errPolled) {
		return true
	}
	return !c.unreachable(ctx, why)
}

// unreachable asks the server, after why (a broken stream, a request
// that got no answer), whether it still answers HTTP, with an OPTIONS
// request, which touches no session. When it cannot be reached (it was
// killed, it is down), the connection fails with [transport.ErrPeerGone],
// as a stdio server's does when its process exits: every call pending
// ends with [ErrGone]. An answer of any status, or none within
// probeWithin, is taken for alive, as is a probe nobody waits for.
func (c *clientConn) unreachable(ctx context.Context, why error) bool {
	if c.ctx.Err() != nil || ctx.Err() != nil {
		return false
	}
	pctx, cancel := context.WithTimeout(ctx, probeWithin)
	defer cancel()
	req, err := http.NewRequestWithContext(pctx, http.MethodOptions, c.cfg.URL, nil)
	if err != nil {
		return false
	}
	resp, err := c.client.Do(req)
	if err == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		_ = resp.Body.Close()
		return false
	}
	if pctx.Err() != nil || c.ctx.Err() != nil {
		return false // slow, or closing: not known to be gone
	}
	c.fail(fmt.Errorf("streamable: client: %w: %w, and it cannot be reached: %w", transport.ErrPeerGone, why, err))
	return true
}

// callerText is err's text for an error answer the caller reads: an
// error of the network, whose text would name the server's URL and
// address, reads as "the connection to the server broke" (they are in the
// connection's terminal error, which the gateway logs).
func (c *clientConn) callerText(err error) string {
	var ue *url.Error
	var ne net.Error
	if errors.As(err, &ue) || errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "the connection to the " + c.name() + " broke"
	}
	return err.Error()
}

// name is how the errors the connection makes itself name the server
// (ClientConfig.Name).
func (c *clientConn) name() string {
	if c.cfg.Name == "" {
		return "server"
	}
	return c.cfg.Name
}
