package transport_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/vigil-mcp/vigil/transport"
)

// admitting is a Conn whose transport says whether it asks the Shedder.
type admitting struct {
	transport.Conn
	admits bool
}

func (a admitting) AdmitsRequests() bool { return a.admits }

// wrapping is a Conn that wraps another, as middleware.CountConn's do.
type wrapping struct {
	transport.Conn
	inner transport.Conn
}

func (w wrapping) Unwrap() transport.Conn { return w.inner }

// The server asks a Conn's transport, through the Conns wrapping it,
// whether it sheds itself; a Conn that does not say does not.
func TestAdmitsRequestsLooksThroughWrappers(t *testing.T) {
	t.Parallel()
	assert.True(t, admits(admitting{admits: true}))
	assert.True(t, admits(wrapping{inner: wrapping{inner: admitting{admits: true}}}))
	assert.False(t, admits(wrapping{inner: admitting{admits: false}}))
	assert.False(t, admits(wrapping{}), "a wrapper of nothing")
	assert.False(t, admits(nil))
}

// admits is how the server asks: through the wrappers, with transport.As.
func admits(c transport.Conn) bool {
	a, ok := transport.As[transport.Admitter](c)
	return ok && a.AdmitsRequests()
}
