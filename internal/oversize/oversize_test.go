package oversize_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/vigil-mcp/vigil/internal/oversize"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestError(t *testing.T) {
	t.Parallel()
	frame := errors.New("frame too large")
	known := &oversize.Error{Response: true, Size: 5 << 20, Limit: 4 << 20, Frame: frame}
	assert.Equal(t, "a message of 5242880 bytes, over the bound of 4194304 bytes", known.Error())
	require.ErrorIs(t, known, frame)
	unknown := &oversize.Error{Limit: 1024, Frame: frame}
	assert.Equal(t, "a message over the bound of 1024 bytes", unknown.Error())
	require.ErrorIs(t, unknown, frame)
}
