package stdio_test

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
	"github.com/vigil-mcp/vigil/transport/stdio"
)

// oversizeSeen is what an OversizeFunc was given.
type oversizeSeen struct {
	head, tail string
	size       int64
}

// TestWithOversizeFrames: a frame over the bound is read to its end and
// handed to the OversizeFunc by its first 64 KiB, last 256 bytes and
// size, in every chunking; what it returns is what Read returns: a
// message, a DecodeError (the Conn reads on), nothing (the frame is
// skipped), or another error (the Conn is done).
func TestWithOversizeFrames(t *testing.T) {
	t.Parallel()
	const limit = 1 << 10
	big := `{"id":1,"result":"` + strings.Repeat("a", 100<<10) + strings.Repeat("z", 300) + `"}`
	input := big + "\r\n" + `{"jsonrpc":"2.0","id":2,"result":{}}` + "\n" + big + "\n" + big + "\n" + big + "\n" + `{"jsonrpc":"2.0","id":3,"result":{}}` + "\n" + big
	for _, v := range readerVariants {
		t.Run(v.name, func(t *testing.T) {
			var seen []oversizeSeen
			answers := []func() (transport.Message, error){
				func() (transport.Message, error) {
					return nil, &transport.DecodeError{Code: protocol.CodeInvalidRequest, Err: errors.New("over")}
				},
				func() (transport.Message, error) { return &transport.Response{ID: transport.Int64ID(9)}, nil },
				func() (transport.Message, error) { return nil, nil },
				func() (transport.Message, error) { return nil, nil },
				func() (transport.Message, error) { return nil, errors.New("done") },
			}
			c := stdio.New(v.wrap(strings.NewReader(input)), io.Discard, stdio.WithMaxFrameSize(limit),
				stdio.WithOversizeFrames(func(head, tail []byte, size int64) (transport.Message, error) {
					seen = append(seen, oversizeSeen{string(head), string(tail), size})
					next := answers[0]
					answers = answers[1:]
					return next()
				}))
			_, err := c.Read(t.Context())
			var derr *transport.DecodeError
			require.ErrorAs(t, err, &derr, "a DecodeError is returned")
			m, err := c.Read(t.Context())
			require.NoError(t, err, "the Conn reads on")
			assert.Equal(t, "2", m.(*transport.Response).ID.String())
			m, err = c.Read(t.Context())
			require.NoError(t, err)
			assert.Equal(t, "9", m.(*transport.Response).ID.String(), "the message made of the frame")
			m, err = c.Read(t.Context())
			require.NoError(t, err, "two frames skipped")
			assert.Equal(t, "3", m.(*transport.Response).ID.String())
			_, err = c.Read(t.Context())
			require.EqualError(t, err, "done")
			_, err = c.Read(t.Context())
			require.EqualError(t, err, "done", "the Conn is done")

			require.Len(t, seen, 5)
			for i, s := range seen {
				assert.Equal(t, int64(len(big)), s.size, "frame %d: its size, without its (CR)LF", i)
				assert.Equal(t, big[:64<<10], s.head, "frame %d: its head", i)
				assert.Equal(t, big[len(big)-256:], s.tail, "frame %d: its tail", i)
			}
		})
	}
}
