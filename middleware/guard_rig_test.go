package middleware_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
)

// guardTools are the extra tools of the Recover, Timeout, ConcurrencyLimit
// and Logging tests, on top of those of addTools.
type guardTools struct {
	causes  chan error    // "cause" sends its context's cause here
	release chan struct{} // each receive lets one "hold" or "hold2" call return
}

// addGuardTools registers "cause" (blocks until its context ends, reports
// the cause, then returns a result nobody should see) and "hold" and
// "hold2" (block until released or cancelled).
func addGuardTools(t testing.TB, srv *server.Server) *guardTools {
	g := &guardTools{causes: make(chan error, 16), release: make(chan struct{})}
	require.NoError(t, srv.AddTool(server.Tool{Name: "cause"},
		func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
			<-ctx.Done()
			g.causes <- context.Cause(ctx)
			return server.Text("too late"), nil
		}))
	hold := func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
		select {
		case <-g.release:
			return server.Text("held"), nil
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
	require.NoError(t, srv.AddTool(server.Tool{Name: "hold"}, hold))
	require.NoError(t, srv.AddTool(server.Tool{Name: "hold2"}, hold))
	return g
}

// sessionID returns the id of the server's only session.
func sessionID(t testing.TB, srv *server.Server) string {
	ss := srv.Sessions()
	require.Len(t, ss, 1)
	return ss[0].ID()
}

// capture is a slog.Handler that keeps every record as one line:
// "LEVEL msg key=value ...", the attributes in order, after those of
// WithAttrs. It is safe for concurrent use.
type capture struct {
	level slog.Leveler
	mu    *sync.Mutex
	recs  *[]string
	pre   []slog.Attr
}

func newCapture(level slog.Leveler) *capture {
	return &capture{level: level, mu: new(sync.Mutex), recs: new([]string)}
}

func (c *capture) Enabled(_ context.Context, l slog.Level) bool { return l >= c.level.Level() }

func (c *capture) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Level.String() + " " + r.Message)
	write := func(a slog.Attr) bool {
		b.WriteString(" " + a.Key + "=" + a.Value.Resolve().String())
		return true
	}
	for _, a := range c.pre {
		write(a)
	}
	r.Attrs(write)
	c.mu.Lock()
	defer c.mu.Unlock()
	*c.recs = append(*c.recs, b.String())
	return nil
}

func (c *capture) WithAttrs(as []slog.Attr) slog.Handler {
	d := *c
	d.pre = append(append([]slog.Attr(nil), c.pre...), as...)
	return &d
}

func (c *capture) WithGroup(string) slog.Handler { return c }

// lines returns the records so far, with replace applied to each (pairs of
// old and new strings, e.g. a session id and "SID").
func (c *capture) lines(replace ...string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := strings.NewReplacer(replace...)
	out := make([]string, len(*c.recs))
	for i, s := range *c.recs {
		out[i] = r.Replace(s)
	}
	return out
}

// pick returns the values of keys in got, zeros included, for comparing a
// few series exactly.
func pick(got map[string]float64, keys ...string) map[string]float64 {
	out := make(map[string]float64, len(keys))
	for _, k := range keys {
		out[k] = got[k]
	}
	return out
}
