package stdio_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/stdio"
)

// A Conn reads one JSON-RPC message per line and writes one per line. A
// line that is not a message is reported with the id it had, if any, and
// reading goes on; a line over the frame limit ends the stream, since
// nothing after it can be trusted to start a frame.
func ExampleNew() {
	in := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n" +
		`{"jsonrpc":"1.0","id":2,"method":"ping"}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" +
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"` + strings.Repeat("x", 64) + `"}}` + "\n" +
		`{"jsonrpc":"2.0","id":4,"method":"ping"}` + "\n")
	var out bytes.Buffer
	c := stdio.New(in, &out, stdio.WithMaxFrameSize(64))
	defer func() { _ = c.Close() }()

	ctx := context.Background()
	for {
		msg, err := c.Read(ctx)
		if de, ok := errors.AsType[*transport.DecodeError](err); ok {
			fmt.Printf("not a message (id %s): error %d\n", de.ID, de.Code)
			continue
		}
		if err != nil {
			fmt.Println("stream ended; frame too large:", errors.Is(err, transport.ErrFrameTooLarge))
			break
		}
		req := msg.(*transport.Request)
		fmt.Println("read", req.Method)
		if !req.IsNotification() {
			_ = c.Write(ctx, &transport.Response{ID: req.ID, Result: []byte(`{}`)})
		}
	}
	fmt.Print(out.String())
	// Output:
	// read ping
	// not a message (id 2): error -32600
	// read notifications/initialized
	// stream ended; frame too large: true
	// {"jsonrpc":"2.0","id":1,"result":{}}
}
