package memory_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/memory"
)

func ExampleNewPair() {
	ctx := context.Background()
	client, server := memory.NewPair()
	defer func() { _ = client.Close() }()

	served := make(chan error, 1)
	go func() {
		defer func() { _ = server.Close() }()
		msg, err := server.Read(ctx)
		if err != nil {
			served <- err
			return
		}
		req := msg.(*transport.Request)
		served <- server.Write(ctx, &transport.Response{ID: req.ID, Result: json.RawMessage(`{"echo":` + string(req.Params) + `}`)})
	}()

	if err := client.Write(ctx, &transport.Request{ID: transport.Int64ID(1), Method: "echo", Params: json.RawMessage(`["hi"]`)}); err != nil {
		fmt.Println(err)
		return
	}
	msg, err := client.Read(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp := msg.(*transport.Response)
	fmt.Printf("id=%v result=%s served=%v\n", resp.ID, resp.Result, <-served)

	// The server closed its end, so the client's next read finds it gone.
	_, err = client.Read(ctx)
	fmt.Println(err)
	// Output:
	// id=1 result={"echo":["hi"]} served=<nil>
	// memory: read: transport: peer gone: EOF
}
