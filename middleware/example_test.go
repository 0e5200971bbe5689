package middleware_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vigil-mcp/vigil/middleware"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/telemetry"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/memory"
)

// ExampleInstrumentation_ConnServer wires a server to Prometheus: the
// instrumentation's chain and observer record into one collector,
// registered with the caller's own registry (cmd/vigil serves it with
// promhttp.HandlerFor), and ConnServer labels the transport and counts
// traffic. Registered tools are labeled as themselves, from the server's
// live registry; other names as "other".
func ExampleInstrumentation_ConnServer() {
	reg := prometheus.NewRegistry()
	inst, err := middleware.NewInstrumentation(middleware.WithRegisterer(reg))
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := server.New(inst.ServerOptions()...)
	_ = srv.AddTool(server.Tool{Name: "greet", Description: "says hello"},
		func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
			return &server.CallToolResult{Content: []server.Content{&server.TextContent{Text: "hello"}}}, nil
		})

	client, end := memory.NewPair()
	served := make(chan error, 1)
	go func() {
		served <- inst.ConnServer(srv, telemetry.TransportMemory).Serve(context.Background(), end)
	}()
	call := func(id int64, method, params string) {
		_ = client.Write(context.Background(), &transport.Request{ID: transport.Int64ID(id), Method: method, Params: json.RawMessage(params)})
		_, _ = client.Read(context.Background())
	}
	call(1, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"example","version":"1"}}`)
	call(2, "tools/call", `{"name":"greet"}`)
	call(3, "tools/call", `{"name":"unknown"}`)
	_ = client.Close()
	if err := <-served; err != nil {
		fmt.Println("serve:", err)
	}

	families, _ := reg.Gather()
	for _, mf := range families {
		for _, metric := range mf.GetMetric() {
			var labels []string
			for _, l := range metric.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			var v float64
			switch {
			case metric.GetCounter() != nil:
				v = metric.GetCounter().GetValue()
			case metric.GetHistogram() != nil:
				v = float64(metric.GetHistogram().GetSampleCount())
			}
			if v != 0 && !strings.Contains(mf.GetName(), "bytes") {
				fmt.Printf("%s{%s} %v\n", mf.GetName(), strings.Join(labels, ","), v)
			}
		}
	}
	// Output:
	// mcp_server_operation_duration_seconds{error_type="",gen_ai_tool_name="",mcp_method_name="initialize",mcp_protocol_version="2025-11-25",network_protocol_name="",network_transport="pipe",rpc_response_status_code=""} 1
	// mcp_server_operation_duration_seconds{error_type="",gen_ai_tool_name="greet",mcp_method_name="tools/call",mcp_protocol_version="2025-11-25",network_protocol_name="",network_transport="pipe",rpc_response_status_code=""} 1
	// mcp_server_operation_duration_seconds{error_type="",gen_ai_tool_name="other",mcp_method_name="tools/call",mcp_protocol_version="2025-11-25",network_protocol_name="",network_transport="pipe",rpc_response_status_code="-32602"} 1
	// mcp_server_received_messages_total{kind="request",transport="memory"} 3
	// mcp_server_requests_finished_total{error_type="",gen_ai_tool_name="",mcp_method_name="initialize",outcome="ok",rpc_response_status_code=""} 1
	// mcp_server_requests_finished_total{error_type="",gen_ai_tool_name="greet",mcp_method_name="tools/call",outcome="ok",rpc_response_status_code=""} 1
	// mcp_server_requests_finished_total{error_type="",gen_ai_tool_name="other",mcp_method_name="tools/call",outcome="error",rpc_response_status_code="-32602"} 1
	// mcp_server_requests_started_total{mcp_method_name="initialize"} 1
	// mcp_server_requests_started_total{mcp_method_name="tools/call"} 2
	// mcp_server_sent_messages_total{kind="response",transport="memory"} 3
	// mcp_server_session_duration_seconds{cause="transport_close",error_type="",transport="memory"} 1
}
