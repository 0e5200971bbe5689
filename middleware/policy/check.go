package policy

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/trace"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/middleware/auth"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// The decision label values.
const (
	decisionAllow = "allow"
	decisionDeny  = "deny"
)

// listCacheSize bounds the tools/list decisions remembered.
const listCacheSize = 4096

// maxLoggedError bounds the text of an evaluation error in a log record:
// CEL may quote a value the client chose (an argument it failed to
// convert).
const maxLoggedError = 256

// ToolPolicy decides call, a tools/call of t whose arguments are valid,
// by t's policy (or the default), for server.WithToolPolicy: nil allows
// it; a denial is a *server.Error with code -32600 and the
// SEP-2643 authorization denial in its data, naming the policy. A tool
// without a policy, and no default, is allowed. Each decision is counted, set on the
// span of ctx, and logged; an evaluation that fails (a missing key, the
// cost limit) denies, and its error is logged. Arguments that a handler
// decoding them into a struct with encoding/json could read otherwise
// than the policy are refused before a policy that reads them runs, with
// a *server.Error of code -32602 naming a member, counted and logged as a
// denial: a top-level member that folds to a property t's input schema
// declares but is not it ("Amount" for "amount"), or two members of one
// object, at any depth, whose names fold alike.
func (s *Set) ToolPolicy(ctx context.Context, call *server.CallToolRequest, t *server.Tool) error {
	c := s.policyFor(t.Name)
	if c == nil {
		return nil
	}
	req := call.Request
	p, ok := auth.PrincipalFromContext(req.ArrivalContext())
	var allow bool
	var err error
	var ambiguous string // why the arguments are refused before the policy runs
	if ok {
		vars := c.vars(p, t, req)
		if c.readsArgs {
			var args map[string]any
			args, err = decodeArguments(call.Arguments)
			if err == nil {
				ambiguous = ambiguity(args, s.schemas.of(t))
			}
			if ambiguous != "" {
				err = errors.New(ambiguousLogError)
			}
			vars["arguments"] = args
		}
		if err == nil {
			allow, err = c.eval(vars)
		}
	}
	decision, level := decisionAllow, slog.LevelDebug
	if !allow {
		decision, level = decisionDeny, slog.LevelInfo
	}
	if counter := c.allowed; counter != nil {
		if !allow {
			counter = c.denied
		}
		counter.Inc()
	}
	trace.SpanFromContext(ctx).SetAttributes(mcpconv.PolicyKey.String(c.name), mcpconv.PolicyDecisionKey.String(decision))
	if s.logger.Enabled(ctx, level) {
		attrs := []slog.Attr{slog.String("tool", t.Name), slog.String("policy", c.name), slog.String("decision", decision), slog.String("request_id", req.ID.String())}
		if ok {
			attrs = append(attrs, slog.String("subject", p.Subject), slog.String("client_id", p.ClientID))
		} else {
			attrs = append(attrs, slog.String("error", "no principal"))
		}
		if err != nil {
			msg := err.Error()
			if len(msg) > maxLoggedError {
				msg = strings.ToValidUTF8(msg[:maxLoggedError], "") + "…"
			}
			attrs = append(attrs, slog.String("error", msg))
		}
		s.logger.LogAttrs(ctx, level, "policy: tools/call "+decision, attrs...)
	}
	if allow {
		return nil
	}
	if ambiguous != "" {
		return server.NewError(protocol.CodeInvalidParams, &ambiguousArguments{
			msg:    "invalid arguments for tool " + strconv.Quote(t.Name) + ": " + ambiguous + "; refused before policy " + strconv.Quote(c.name),
			denied: &mcpconv.PolicyDenied{Policy: c.name},
		})
	}
	e := server.NewError(protocol.CodeInvalidRequest, &mcpconv.PolicyDenied{Policy: c.name})
	e.Data = c.denial
	return e
}

// ToolAccess reports whether tools/list shows t to req: false when t's
// policy reads no arguments and denies req's principal (or there is none).
// For any other method it returns true, so that a call of the tool
// reaches [Set.ToolPolicy], which answers a denial naming the policy
// rather than as an unknown tool. Compose it with auth.ToolAccess in server.WithToolAccess:
//
//	server.WithToolAccess(func(req *server.Request, t *server.Tool) bool {
//		return auth.ToolAccess(req, t) && set.ToolAccess(req, t)
//	})
//
// The decisions of policies that read neither arguments nor request are
// remembered per principal and tool (a bounded cache).
func (s *Set) ToolAccess(req *server.Request, t *server.Tool) bool {
	if req.Method != "tools/list" {
		return true
	}
	c := s.policyFor(t.Name)
	if c == nil || c.readsArgs {
		return true
	}
	p, ok := auth.PrincipalFromContext(req.ArrivalContext())
	if !ok {
		return false
	}
	if c.readsRequest {
		return c.allows(c.vars(p, t, req))
	}
	key := listKey{principal: p.Key(), tool: t.Name}
	if allow, ok := s.listed.get(key, p, c); ok {
		return allow
	}
	allow := c.allows(c.vars(p, t, req))
	s.listed.put(key, listEntry{p: p, c: c, allow: allow})
	return allow
}

// eval runs the policy on vars.
// vars returns the variables c reads of p, t and req, arguments aside:
// the others are not built.
func (c *compiled) vars(p *auth.Principal, t *server.Tool, req *server.Request) map[string]any {
	vars := make(map[string]any, 4)
	if c.readsPrincipal {
		vars["principal"] = principalOf(p)
	}
	if c.readsTool {
		vars["tool"] = toolOf(t)
	}
	if c.readsRequest {
		vars["request"] = requestOf(req)
	}
	return vars
}

func (c *compiled) eval(vars map[string]any) (bool, error) {
	out, _, err := c.prg.Eval(vars)
	if err != nil {
		return false, err
	}
	allow, _ := out.Value().(bool)
	return allow, nil
}

// allows is eval without its error: a failed evaluation denies.
func (c *compiled) allows(vars map[string]any) bool {
	allow, err := c.eval(vars)
	return err == nil && allow
}

// denialData returns the data of the error that answers a call the named
// policy denied: SEP-2643's authorization denial, and the policy.
func denialData(name string) []byte {
	b, _ := json.Marshal(map[string]any{
		"authorization": map[string]string{"reason": "insufficient_authorization"},
		"policy":        name,
	})
	return b
}

// listKey is what a tools/list decision is remembered by.
type listKey struct{ principal, tool string }

// listEntry is one remembered decision: valid only for the very principal
// (a new token of the same key may hold other scopes or claims) and
// policy it was made with.
type listEntry struct {
	p     *auth.Principal
	c     *compiled
	allow bool
}

func (l *listCache) get(k listKey, p *auth.Principal, c *compiled) (allow, ok bool) {
	l.mu.Lock()
	e, found := l.m[k]
	l.mu.Unlock()
	if !found || e.p != p || e.c != c {
		return false, false
	}
	return e.allow, true
}

func (l *listCache) put(k listKey, e listEntry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil || len(l.m) >= listCacheSize {
		l.m = make(map[listKey]listEntry)
	}
	l.m[k] = e
}
