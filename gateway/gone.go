package gateway

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/vigil-mcp/vigil/gateway/internal/upstream"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// goneError is why a forwarded call failed when its upstream went away
// or was closed: the client reads "upstream NAME is gone", and the
// server's telemetry finds server.ErrUpstreamClosed in it, so the call's
// outcome has the cause upstream_closed rather than a bare -32603.
type goneError struct {
	name string
	err  error // the session's end: wraps upstream.ErrGone or ErrClosed
}

func (e *goneError) Error() string {
	if errors.Is(e.err, transport.ErrFrameTooLarge) {
		return "upstream " + e.name + " is gone: it sent a message over the size bound"
	}
	return "upstream " + e.name + " is gone"
}

// tooLarge is the error of a call whose answer was over the upstream's
// bound on a message, which names the bound and how to raise it.
func (m *mount) tooLarge(e *upstream.TooLargeError) error {
	size := "more than " + strconv.Itoa(e.Max) + " bytes"
	if e.Size > 0 {
		size = strconv.FormatInt(e.Size, 10) + " bytes"
	}
	return fmt.Errorf("upstream %s answered with a message of %s, over the gateway's bound on a message of an upstream, %d bytes "+
		"(Upstream.MaxMessageBytes; vigil -upstream-max-message)", m.up.Name, size, e.Max)
}

// Unwrap returns the server's cause and the session's end.
func (e *goneError) Unwrap() []error { return []error{server.ErrUpstreamClosed, e.err} }

// Upstream returns the name of the upstream that went away.
func (e *goneError) Upstream() string { return e.name }

// upstreamGone returns the handler's error of a call whose upstream
// name went away with err: -32603 "upstream NAME is gone", recorded
// upstream_closed.
func upstreamGone(name string, err error) error {
	return server.NewError(protocol.CodeInternal, &goneError{name: name, err: err})
}
