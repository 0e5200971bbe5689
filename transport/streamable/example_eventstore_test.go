package streamable_test

import (
	"context"
	"fmt"

	"github.com/vigil-mcp/vigil/transport/streamable"
)

// A memory store keeps the events of each stream of a session; a replay
// after an event returns the later events of that event's stream only.
func ExampleNewMemoryEventStore() {
	store := streamable.NewMemoryEventStore(64<<20, 1<<20)
	ctx := context.Background()
	priming, _ := store.Append(ctx, "session-1", "1", nil)
	_, _ = store.Append(ctx, "session-1", "2", []byte(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`))
	_, _ = store.Append(ctx, "session-1", "1", []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))

	stream, events, err := store.Replay(ctx, "session-1", priming)
	fmt.Println(stream, err)
	for _, ev := range events {
		fmt.Println(ev.ID, string(ev.Data))
	}
	// Output:
	// 1 <nil>
	// 1_3 {"jsonrpc":"2.0","id":1,"result":{}}
}
