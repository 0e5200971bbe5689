package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"time"

	"github.com/vigil-mcp/vigil/debugpage"
)

// observeFlags are what vigil tells about its work: its logs, the live
// page and its trace ring, the audit log, and what traces hold and trust.
type observeFlags struct{}

func (observeFlags) register(fs *flag.FlagSet, cfg *config) {
	fs.TextVar(&cfg.logLevel, "log-level", slog.LevelInfo, "`level` of the logs on standard error: debug, info, warn or error")
	fs.StringVar(&cfg.logFormat, "log-format", "text", "`format` of the logs on standard error: text or json")
	fs.IntVar(&cfg.traceRing, "trace-ring", debugpage.DefaultTraceRing, "routine traces kept in memory for /debug/vigil when OTEL_* configures no exporter, besides the slowest and the last failed, cancelled and dropped ones of each method/tool (0: keep no trace)")
	fs.BoolVar(&cfg.debug, "debug", true, "serve the /debug/vigil page (sessions, requests in flight, recent traces)")
	fs.StringVar(&cfg.auditLog, "audit-log", "", "`file` that gets one JSON line per tools/call (who, which tool, outcome; argument names, not values), or - for standard output")
	fs.DurationVar(&cfg.auditBlock, "audit-block", 100*time.Millisecond, "how long a tool call's audit line may wait for room when the audit log's buffer is full (its destination stalls), before it is dropped and counted in mcp_server_audit_lines_dropped_total (0: drop at once)")
	fs.BoolVar(&cfg.traceContent, "trace-content", false, "record tool call arguments and results (gen_ai.tool.call.arguments, gen_ai.tool.call.result) and prompt variables (gen_ai.prompt.variable.<name>) on spans, secrets masked by the default redactor (keys like password, token, secret, authorization, api_key; bearer tokens and keys) and each value cut at 4 KiB; they may still hold personal data")
	fs.StringVar(&cfg.traceClientContext, "trace-client-context", "", "`mode` for the trace context (traceparent, baggage) in a request's _meta: trust (the request's span is its child, the client's baggage reaches handlers) or link (a trace of the server's, linked to the client's span; baggage dropped); default: link when -http is not loopback and -auth-issuer is set, else trust")
}

func (observeFlags) resolve(cfg *config, _ flagSource) error {
	switch {
	case cfg.traceClientContext != "" && cfg.traceClientContext != "trust" && cfg.traceClientContext != "link":
		return fmt.Errorf("-trace-client-context %q: want trust or link", cfg.traceClientContext)
	case cfg.logFormat != "text" && cfg.logFormat != "json":
		return fmt.Errorf("-log-format %q: want text or json", cfg.logFormat)
	case cfg.traceRing < 0 || cfg.auditBlock < 0:
		return errors.New("-trace-ring and -audit-block must not be negative")
	case cfg.stdio && cfg.auditLog == "-":
		return errors.New("-audit-log - (standard output) cannot be used with -stdio: standard output carries MCP")
	}
	return nil
}
