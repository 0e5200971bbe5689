package streamable

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/transport"
)

// The messages queued on a standalone GET stream count against the
// session's caller and the process's budget until written, or dropped
// when the stream ends.
func TestOutboxCountsQueuedBytes(t *testing.T) {
	st, _, _ := queuedStream(t)
	qs := newQuotaState(Quotas{Bytes: 1 << 20, MemoryBudget: 1 << 20})
	st.out.quotas, st.out.caller = qs, "192.0.2.1"
	m := &transport.Request{Method: "notifications/message", Params: json.RawMessage(`{"data":"` + strings.Repeat("a", 1000) + `"}`)}
	size := transport.EncodedSize(m)
	require.NoError(t, st.deliver(m))
	require.NoError(t, st.deliver(m))
	assert.Equal(t, 2*size, qs.bytes.Held("192.0.2.1"), "queued: counted")
	assert.Equal(t, 2*size, qs.total.Held(totalKey))

	require.NoError(t, st.writeQueued())
	assert.Zero(t, qs.bytes.Held("192.0.2.1"), "written: released")
	assert.Zero(t, qs.total.Held(totalKey))

	require.NoError(t, st.deliver(m))
	assert.Equal(t, size, qs.bytes.Held("192.0.2.1"), "counted anew")
	st.out.close()
	assert.Zero(t, qs.bytes.Held("192.0.2.1"), "dropped: released")
	assert.Zero(t, qs.total.Held(totalKey))
}
