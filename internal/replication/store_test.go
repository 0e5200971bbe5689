package replication_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/vigil-mcp/vigil/internal/replication"
)

// event is another package's type of an event's fields.
type event struct {
	ID   string
	Data []byte
}

func TestEventsAs(t *testing.T) {
	t.Parallel()
	got := replication.EventsAs[event]([]replication.Event{{ID: "s~1-0"}, {ID: "s~2-0", Data: []byte(`{"jsonrpc":"2.0"}`)}})
	assert.Equal(t, []event{{ID: "s~1-0"}, {ID: "s~2-0", Data: []byte(`{"jsonrpc":"2.0"}`)}}, got)
	assert.Empty(t, replication.EventsAs[event](nil))
}
