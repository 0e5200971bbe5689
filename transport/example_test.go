package transport_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

func ExampleDecodeMessage() {
	frames := []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":"a","result":{}}`,
		`{"jsonrpc":"1.0","id":2,"method":"ping"}`,
		`{"jsonrpc":`,
	}
	for _, f := range frames {
		msg, err := transport.DecodeMessage([]byte(f))
		if de, ok := errors.AsType[*transport.DecodeError](err); ok {
			fmt.Printf("error %d for id %q: %v\n", de.Code, de.ID, de.Err)
			continue
		}
		switch m := msg.(type) {
		case *transport.Request:
			fmt.Printf("request %q id=%q notification=%v\n", m.Method, m.ID, m.IsNotification())
		case *transport.Response:
			fmt.Printf("response id=%q result=%s\n", m.ID, m.Result)
		}
	}
	// Output:
	// request "tools/list" id="1" notification=false
	// request "notifications/initialized" id="" notification=true
	// response id="a" result={}
	// error -32600 for id "2": "jsonrpc" must be "2.0"
	// error -32700 for id "": unexpected end of JSON input
}

func ExampleAppendMessage() {
	var buf []byte
	for _, m := range []transport.Message{
		&transport.Request{ID: transport.Int64ID(1), Method: "tools/call", Params: json.RawMessage(`{"name":"echo"}`)},
		&transport.Response{ID: transport.StringID("x"), Error: &transport.Error{Code: -32601, Message: "no \"such\" method"}},
		&transport.Response{Error: &transport.Error{Code: int64(protocol.CodeParseError), Message: "parse error"}},
	} {
		var err error
		buf, err = transport.AppendMessage(buf[:0], m)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(string(buf))
	}
	// Output:
	// {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}
	// {"jsonrpc":"2.0","id":"x","error":{"code":-32601,"message":"no \"such\" method"}}
	// {"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}
}

// A Shedder from NewShedder admits every request until requests wait
// longer than its target to be read, with the process busy; a transport
// asks it before each request it may shed, with the request's context.
func ExampleNewShedder() {
	shed := transport.NewShedder(transport.DefaultShedTarget)
	fmt.Println("shed:", shed.Shed(context.Background()))
	// Output: shed: false
}
