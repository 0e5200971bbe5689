// Package mcptest is an MCP client for tests, in the spirit of
// [net/http/httptest]: it drives a server you built the way a real client
// does, over any [transport.Conn], so that a test of your own tools,
// resources and prompts takes a few lines.
//
// [Connect] serves a server on an in-memory pipe ([transport/memory]) and
// returns a [Client] that has completed the initialize handshake; [Pipe]
// stops before the handshake. [NewClient] wraps a Conn you made yourself:
// for a Streamable HTTP endpoint (such as an [net/http/httptest.Server]
// serving [transport/streamable]), the client Conn of
// [transport/streamable.Dial]. Read [Example] first.
//
// A Client speaks on two levels:
//
//   - Typed calls ([Client.CallTool], [Client.ListTools],
//     [Client.ReadResource], [Client.GetPrompt], ...) pick the request id,
//     wait for the answer, answer the server's own requests in between with
//     the handler of [WithRequestHandler], and fail the test on a
//     JSON-RPC error; lists and reads decode into the server package's own
//     types (server.Tool, server.Resource, ...), as a client sees them.
//     [Client.Call] is the same for any method and returns the error
//     object instead.
//   - Wire-level calls send exactly what the test says, with the id it
//     chooses ([Client.Request], [Client.Notify], [Client.Send],
//     [Client.SendFrame]), and read the server's messages strictly in order
//     ([Client.Recv], [Client.RecvResponse], [Client.RecvResult],
//     [Client.RecvError], [Client.RecvRequest]): for tests of cancellation,
//     pipelining, ordering and server-to-client requests.
//
// Messages a typed call reads that are not its answer (notifications,
// other responses) are kept, in order, for the next Recv.
//
// Every method that fails calls t.Fatalf, so, like [testing.T.FailNow], it
// must be called from the test's goroutine. Cleanup is registered with
// [testing.TB.Cleanup]: the Client closes its Conn and, for [Pipe] and
// [Connect], waits for the server's Serve to return, so no goroutine
// outlives the test.
//
// Outside a test, in an Example that has no *testing.T, t may be nil: a
// failure then panics, and [Client.Close] does what the end of the test
// would, so an Example defers it:
//
//	c := mcptest.Connect(nil, srv) // in a test: t
//	defer c.Close()
//
// The package imports no Vigil package but transport,
// transport/memory and transport/streamable, so that any package,
// server's own tests included, can use it.
package mcptest
