// Package vigil runs a production MCP service in a few lines: [New]
// returns a [Service] whose Server takes the tools, resources and prompts,
// and [Service.ListenAndServe] serves MCP at /mcp and, on an admin
// listener, Prometheus metrics (/metrics), the live page (/debug/vigil),
// liveness (/healthz) and readiness (/readyz), until its context is done:
//
//	svc := vigil.New("weather", "1.0.0",
//		vigil.WithServerOptions(server.WithTimeout(30*time.Second)))
//	err := server.AddTypedTool(svc.Server, server.Tool{Name: "forecast"}, forecast)
//	if err == nil {
//		err = svc.ListenAndServe(ctx, "127.0.0.1:8080", "127.0.0.1:9090")
//	}
//
// Every request is traced (to OTLP when the OTEL_* environment says so,
// else to the live page's ring), counted, and logged with its outcome, and
// the lines logged with [Service.Logger] in a request's context carry its
// trace id. The Service owns the ordering rules of its parts: options
// before tools, the metric series of the tools created once they are
// registered, the outcomes batched by the server recorded before each
// scrape, and on shutdown the endpoint's drain, the server's graceful
// shutdown, the endpoint's close, then the HTTP servers'.
//
// [Service.ServeStdio] serves one session on standard input and output
// instead; [Service.Endpoint] and [Service.AdminHandler], with
// [Service.Shutdown], mount the same on HTTP servers of your own. The
// parts stay public (Server, Instrumentation, Page, Registry,
// TracerProvider) for what the Service does not do; docs/server.md wires
// them by hand, as ListenAndServe does.
package vigil
