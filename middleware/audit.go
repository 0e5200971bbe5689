package middleware

import (
	"context"
	"encoding/json"
	"io"
	"slices"
	"time"

	"github.com/vigil-mcp/vigil/middleware/auth"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/telemetry"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// AuditRecord is one line of the audit log [Audit] writes, as JSON.
type AuditRecord struct {
	Time      time.Time `json:"time"`                 // when the outcome was sealed (RFC 3339, nanoseconds)
	Subject   string    `json:"subject,omitempty"`    // the principal's subject; absent without authorization
	ClientID  string    `json:"client_id,omitempty"`  // the OAuth client of the principal's token
	SessionID string    `json:"session_id,omitempty"` // absent for a stateless request
	RequestID string    `json:"request_id"`           // the JSON-RPC id
	Tool      string    `json:"tool"`
	// Outcome is ok, error, cancelled or dropped, as in the request log
	// and the metrics (telemetry.Outcome*).
	Outcome   string  `json:"outcome"`
	ToolError bool    `json:"tool_error,omitempty"` // ok, but the result has isError set
	Code      int64   `json:"code,omitempty"`       // the JSON-RPC error code of outcome error
	Cause     string  `json:"cause,omitempty"`      // why it was cancelled (client_cancel, timeout, ...)
	Reason    string  `json:"reason,omitempty"`     // why no response was written (outcomes cancelled and dropped)
	Duration  float64 `json:"duration_seconds"`     // from receipt until the outcome was sealed
	// Arguments are the names of the call's arguments, sorted; never their
	// values, which are in ArgumentValues only for the tools of
	// [WithAuditArgumentValues].
	Arguments      []string        `json:"arguments"`
	ArgumentValues json.RawMessage `json:"argument_values,omitempty"`
}

// Audit returns middleware that writes one [AuditRecord], as a line of JSON
// in a single Write, to w for each tools/call when its outcome is sealed
// (see [server.Request.OnDone]): who called (the [auth.Principal] of the
// request's arrival context, if there is one), which tool, in which
// session, how it ended and how long it took, and the names of its
// arguments. Other methods pass unrecorded. It reads
// [WithAuditArgumentValues].
//
// Audit never waits for anything but w.Write, which runs after the
// response was written: w must not block (pass a buffered writer that
// writes in the background, such as the one cmd/vigil uses for its logs
// and audit log) and must be safe for concurrent use, writing each Write
// whole. Write errors are ignored. A nil w makes Audit the identity. The
// returned middleware is safe for concurrent use.
func Audit(w io.Writer, opts ...Option) server.Middleware {
	if w == nil {
		return func(next server.Handler) server.Handler { return next }
	}
	values := newConfig(opts).auditValues
	return func(next server.Handler) server.Handler {
		return func(ctx context.Context, req *server.Request) (any, error) {
			if req.Method != "tools/call" || req.IsNotification() {
				return next(ctx, req)
			}
			start := req.Received
			if start.IsZero() {
				start = time.Now()
			}
			req.OnDone(func(out server.Outcome) {
				now := out.EndTime()
				rec := AuditRecord{Time: now, RequestID: req.ID.String(), Tool: req.Name, Duration: now.Sub(start).Seconds()}
				if p, ok := auth.PrincipalFrom(req.ArrivalContext()); ok {
					rec.Subject, rec.ClientID = p.Subject, p.ClientID
				}
				if req.InSession() {
					rec.SessionID = req.Session.ID()
				}
				rec.Arguments, rec.ArgumentValues = auditArguments(req.Params, values[req.Name])
				outcome, errType := classifyOutcome(out)
				rec.Outcome = outcome
				switch outcome {
				case telemetry.OutcomeError:
					rec.Code = int64(server.CodeOf(out.Err))
					if cancelCause(out) == protocol.ReasonTimeout {
						rec.Cause = protocol.ReasonTimeout.String()
					}
				case telemetry.OutcomeCancelled:
					rec.Cause = server.ReasonOfCause(out.Cause).String()
					rec.Reason = out.Dropped.String()
				case telemetry.OutcomeDropped:
					rec.Reason = out.Dropped.String()
				case telemetry.OutcomeOK:
					rec.ToolError = errType == telemetry.ErrorTypeTool
				}
				line, err := json.Marshal(&rec)
				if err != nil {
					return
				}
				_, _ = w.Write(append(line, '\n'))
			})
			return next(ctx, req)
		}
	}
}

// auditArguments returns the sorted names of the arguments of a tools/call
// with params, never nil, and with withValues their object as sent. It
// reads params as the core and the tool do: member names matched exactly,
// the last "arguments" winning (encoding/json would also take a later
// "ARGUMENTS", and record other arguments than the tool receives).
func auditArguments(params json.RawMessage, withValues bool) ([]string, json.RawMessage) {
	names := []string{}
	var v [1][]byte
	if !transport.SplitObjectInto(v[:], params, "arguments") {
		return names, nil
	}
	args := v[0]
	if !transport.EachMember(args, func(key, _ []byte) { names = append(names, string(key)) }) {
		return names, nil // absent, null, or not an object
	}
	slices.Sort(names)
	names = slices.Compact(names)
	if !withValues {
		return names, nil
	}
	return names, json.RawMessage(args)
}
