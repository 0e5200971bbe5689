package gateway

import (
	"context"
	"encoding/json"
	"log/slog"
	"regexp"
	"strings"

	"github.com/vigil-mcp/vigil/gateway/internal/upstream"
	"github.com/vigil-mcp/vigil/server"
)

// Forwarding beyond calls: completions, and the log level the upstream
// sends at.

// wantLogs asks an upstream that declares logging for every level
// (logging/setLevel debug): one upstream session serves every client, so
// each client's own level (its logging/setLevel, or a 2026-07-28 request's
// logLevel) is applied by the gateway as it relays (relayLog). A refusal
// is logged, not fatal.
func (m *mount) wantLogs(ctx context.Context, s *upstream.Session) {
	var caps struct {
		Logging json.RawMessage `json:"logging"`
	}
	if json.Unmarshal(s.Initialized().Capabilities, &caps) != nil || caps.Logging == nil {
		return
	}
	if _, err := s.Call(ctx, "logging/setLevel", json.RawMessage(`{"level":"debug"}`), nil); err != nil {
		m.log.Warn("gateway: the upstream refused logging/setLevel", "upstream", m.up.Name, "error", err)
	}
}

// logLevels are the slog levels of the RFC 5424 severities MCP names.
var logLevels = map[string]slog.Level{
	"debug": slog.LevelDebug, "info": slog.LevelInfo, "notice": server.LevelNotice, "warning": slog.LevelWarn,
	"error": slog.LevelError, "critical": server.LevelCritical, "alert": server.LevelAlert, "emergency": server.LevelEmergency,
}

// clientWantsLog reports whether the caller of ctx asked for log messages
// at the level of params (an upstream's notifications/message params): at
// or above its session's logging/setLevel, or its 2026-07-28 request's
// logLevel (without which a stateless request gets none).
func clientWantsLog(ctx context.Context, params json.RawMessage) bool {
	var p struct {
		Level string `json:"level"`
	}
	if json.Unmarshal(params, &p) != nil {
		return false
	}
	level, ok := logLevels[p.Level]
	return ok && server.ClientLogger(ctx).Enabled(ctx, level)
}

// uriVariable matches an expression of a URI template (RFC 6570): its
// operator, then variable names with their modifiers.
var uriVariable = regexp.MustCompile(`\{[+#./;?&=,!@|]?([^}]*)\}`)

// templateVariables returns the names of a URI template's variables.
func templateVariables(uriTemplate string) []string {
	var names []string
	for _, m := range uriVariable.FindAllStringSubmatch(uriTemplate, -1) {
		for v := range strings.SplitSeq(m[1], ",") {
			v, _, _ = strings.Cut(v, ":")
			if v = strings.TrimSuffix(v, "*"); v != "" {
				names = append(names, v)
			}
		}
	}
	return names
}

// addCompleters makes the catalog's prompt arguments and template
// variables completable through the upstream (completion/complete), for
// an upstream that declares completions.
func (cat *catalog) addCompleters() {
	for i := range cat.prompts {
		p := &cat.prompts[i]
		ref := server.CompletionRef{Type: "ref/prompt", Name: cat.promptOf[i]}
		for j := range p.Arguments {
			p.Arguments[j].Complete = cat.m.completer(ref)
		}
	}
	for i := range cat.templates {
		t := &cat.templates[i]
		ref := server.CompletionRef{Type: "ref/resource", URI: t.URITemplate}
		t.Complete = map[string]server.CompleteFunc{}
		for _, v := range templateVariables(t.URITemplate) {
			t.Complete[v] = cat.m.completer(ref)
		}
	}
}

// completer returns the completer that asks the upstream to complete an
// argument of ref, a prompt (by the upstream's own name) or a template.
func (m *mount) completer(ref server.CompletionRef) server.CompleteFunc {
	return func(ctx context.Context, req *server.CompleteRequest) ([]string, error) {
		params := map[string]any{"ref": ref, "argument": map[string]string{"name": req.Argument, "value": req.Value}}
		if len(req.Context) > 0 {
			params["context"] = map[string]any{"arguments": req.Context}
		}
		raw, err := m.forward(ctx, "completion/complete", params, nil)
		if err != nil {
			return nil, err
		}
		var res struct {
			Completion struct {
				Values []string `json:"values"`
			} `json:"completion"`
		}
		if err := json.Unmarshal(raw, &res); err != nil {
			return nil, badResult(err)
		}
		return res.Completion.Values, nil
	}
}
