package conncap_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/vigil-mcp/vigil/internal/conncap"
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
	assert.True(t, conncap.AdmitsRequests(admitting{admits: true}))
	assert.True(t, conncap.AdmitsRequests(wrapping{inner: wrapping{inner: admitting{admits: true}}}))
	assert.False(t, conncap.AdmitsRequests(wrapping{inner: admitting{admits: false}}))
	assert.False(t, conncap.AdmitsRequests(wrapping{}), "a wrapper of nothing")
	assert.False(t, conncap.AdmitsRequests(nil))
}
