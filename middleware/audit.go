package middleware

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/vigil-mcp/vigil/internal/invisible"
	"github.com/vigil-mcp/vigil/internal/jsonscan"
	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/internal/serverhook"
	"github.com/vigil-mcp/vigil/middleware/auth"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// auditRecord is one line of the audit log [WithAuditLog] writes, as JSON
// (docs/operations.md lists its members: the line is the contract). What
// the client chose is bounded, so that a line is at most 16 KiB whatever
// the call: the tool name to 128 bytes and the request id to 256, at most
// 64 argument names of at most 128 bytes each (MoreArguments counts the
// rest), argument values to 4 KiB of JSON (else left out); a line still
// over its bound loses its values, then argument names. Truncated says
// that something was cut. The bidirectional controls and zero-width
// characters of what the client chose are written as \u escapes (\u202e),
// never raw.
type auditRecord struct {
	Time      time.Time `json:"time"`                 // when the outcome was sealed (RFC 3339, nanoseconds)
	Subject   string    `json:"subject,omitempty"`    // the principal's subject; absent without authorization
	ClientID  string    `json:"client_id,omitempty"`  // the OAuth client of the principal's token
	Actors    []string  `json:"actors,omitempty"`     // who acts on behalf of Subject: a delegated token's act chain (RFC 8693 §4.1), the one acting now first
	SessionID string    `json:"session_id,omitempty"` // absent for a stateless request
	RequestID string    `json:"request_id"`           // the JSON-RPC id
	Tool      string    `json:"tool"`
	// Outcome is ok, error, cancelled or dropped, as in the request log
	// and the metrics (telemetry.Outcome*).
	Outcome   string  `json:"outcome"`
	ToolError bool    `json:"tool_error,omitempty"` // ok, but the result has isError set
	Code      int64   `json:"code,omitempty"`       // the JSON-RPC error code of outcome error, or of a cancelled request the transport answered
	Cause     string  `json:"cause,omitempty"`      // why it was cancelled (client_cancel, timeout, ...)
	Reason    string  `json:"reason,omitempty"`     // why no response was written (outcomes cancelled and dropped)
	Policy    string  `json:"policy,omitempty"`     // the tool policy that denied the call (outcome error; package middleware/policy)
	Duration  float64 `json:"duration_seconds"`     // from receipt until the outcome was sealed
	// Arguments are the names of the call's arguments, sorted; never their
	// values, which are in ArgumentValues only for the tools of
	// [WithAuditArgumentValues].
	Arguments      []string        `json:"arguments"`
	MoreArguments  int             `json:"more_arguments,omitempty"` // argument names left out of Arguments
	ArgumentValues json.RawMessage `json:"argument_values,omitempty"`
	Truncated      bool            `json:"truncated,omitempty"` // a client-chosen field was cut to its bound
}

// Bounds of an [auditRecord], in bytes but for auditMaxArgs.
const (
	auditMaxTool    = 128 // the MCP limit of a tool name
	auditMaxID      = 256
	auditMaxArgs    = 64
	auditMaxArgName = 128
	auditMaxValues  = 4 << 10
	auditMaxLine    = 16 << 10
)

// audit is the audit log of [WithAuditLog] with cfg; a nil w makes it the
// identity. It is safe for concurrent use.
func audit(w io.Writer, cfg auditConfig) server.Middleware {
	if w == nil {
		return func(next server.Handler) server.Handler { return next }
	}
	values := cfg.values
	return func(next server.Handler) server.Handler {
		return func(ctx context.Context, req *server.Request) (any, error) {
			if req.Method != "tools/call" || req.IsNotification() {
				return next(ctx, req)
			}
			start := req.Received
			if start.IsZero() {
				start = time.Now()
			}
			serverhook.Of[server.Outcome](ctx).OnDone(func(out server.Outcome) {
				now := out.Ended
				rec := auditRecord{Time: now, Duration: now.Sub(start).Seconds()}
				rec.Tool = truncate(req.Name, auditMaxTool, &rec.Truncated)
				rec.RequestID = truncate(req.ID.String(), auditMaxID, &rec.Truncated)
				if p, ok := auth.PrincipalFromContext(req.ArrivalContext()); ok {
					rec.Subject, rec.ClientID, rec.Actors = p.Subject, p.ClientID, p.Actors
				}
				if req.InSession() {
					rec.SessionID = req.Session.ID()
				}
				auditArguments(&rec, req.Params, values[req.Name])
				outcome, errType := classifyOutcome(out)
				rec.Outcome = outcome
				switch outcome {
				case mcpconv.OutcomeError:
					rec.Code = int64(server.CodeOf(out.Err))
					if d, ok := errors.AsType[*mcpconv.PolicyDenied](out.Err); ok {
						rec.Policy = d.Policy
					}
					if r := cancelCause(out); r != protocol.ReasonNone {
						rec.Cause = r.String()
					}
				case mcpconv.OutcomeCancelled:
					rec.Cause = server.ReasonOfCause(out.Cause).String()
					if answeredCancel(out) {
						rec.Code = int64(server.CodeOf(out.Err))
					} else {
						rec.Reason = out.Dropped.String()
					}
				case mcpconv.OutcomeDropped:
					rec.Reason = out.Dropped.String()
				case mcpconv.OutcomeOK:
					rec.ToolError = errType == mcpconv.ErrorTypeTool || errType == mcpconv.ErrorTypeInvalidArguments
				}
				line, err := marshalAudit(&rec)
				if err != nil {
					return
				}
				_, _ = w.Write(append(line, '\n'))
			})
			return next(ctx, req)
		}
	}
}

// auditArguments sets the arguments of rec, a tools/call with params:
// their sorted names, never nil, within their bounds, and with withValues
// their object as sent, if small enough. It reads params as the core and
// the tool do: member names matched exactly, the last "arguments" winning
// (encoding/json would also take a later "ARGUMENTS", and record other
// arguments than the tool receives).
func auditArguments(rec *auditRecord, params json.RawMessage, withValues bool) {
	rec.Arguments = []string{}
	var v [1][]byte
	if !jsonscan.SplitObjectInto(v[:], params, "arguments") {
		return
	}
	args := v[0]
	names := rec.Arguments
	if !jsonscan.EachMember(args, func(key, _ []byte) {
		if len(key) > auditMaxArgName {
			key = truncateBytes(key, auditMaxArgName)
			rec.Truncated = true
		}
		names = append(names, string(key))
	}) {
		return // absent, null, or not an object
	}
	slices.Sort(names)
	names = slices.Compact(names)
	if len(names) > auditMaxArgs {
		rec.MoreArguments = len(names) - auditMaxArgs
		names = slices.Clip(names[:auditMaxArgs])
	}
	rec.Arguments = names
	if !withValues {
		return
	}
	if len(args) > auditMaxValues {
		rec.Truncated = true
		return
	}
	rec.ArgumentValues = json.RawMessage(args)
}

// marshalAudit encodes rec within auditMaxLine, with the invisible
// characters a client chose escaped (internal/invisible: a bidirectional
// override must not make the line read otherwise than it is), dropping its
// argument values, then argument names, when escaping made it larger.
func marshalAudit(rec *auditRecord) ([]byte, error) {
	for {
		line, err := json.Marshal(rec)
		line = invisible.Escape(line)
		if err != nil || len(line) < auditMaxLine {
			return line, err
		}
		rec.Truncated = true
		switch n := len(rec.Arguments); {
		case rec.ArgumentValues != nil:
			rec.ArgumentValues = nil
		case n > 0:
			rec.MoreArguments += n - n/2
			rec.Arguments = rec.Arguments[:n/2]
		default:
			return line, nil // the principal's fields, which its token bounds
		}
	}
}

// truncate returns s cut to at most n bytes, at a character boundary,
// setting *cut when it was.
func truncate(s string, n int, cut *bool) string {
	if len(s) <= n {
		return s
	}
	*cut = true
	return truncateBytes(s, n)
}

// truncateBytes returns b cut to at most n bytes, not inside a UTF-8
// sequence.
func truncateBytes[T string | []byte](b T, n int) T {
	if len(b) <= n {
		return b
	}
	i := n
	for i > 0 && i > n-utf8.UTFMax && !utf8.RuneStart(b[i]) {
		i--
	}
	return b[:i]
}
