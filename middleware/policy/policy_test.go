package policy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.yaml.in/yaml/v3"

	"github.com/vigil-mcp/vigil/middleware"
	"github.com/vigil-mcp/vigil/middleware/auth"
	"github.com/vigil-mcp/vigil/middleware/policy"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// issueFile is the policy file of issue 57.
const issueFile = `default: 'true'                       # for tools without their own
tools:
  sleep: 'arguments.ms < 1000 || "vigil.slow" in principal.scopes'
  echo: 'principal.subject != "mallory"'
`

// parse reads a policy file.
func parse(t testing.TB, file string) policy.Config {
	t.Helper()
	var cfg policy.Config
	require.NoError(t, yaml.Unmarshal([]byte(file), &cfg))
	return cfg
}

// newServer returns a server with echo, sleep and ping (no policy of its
// own) behind the policies of file, counted in reg.
func newServer(t testing.TB, file string, reg prometheus.Registerer) *server.Server {
	t.Helper()
	return newServerWith(t, file, reg, auth.ToolAccess)
}

// newServerWith is newServer with access instead of auth.ToolAccess
// (nil: every tool).
func newServerWith(t testing.TB, file string, reg prometheus.Registerer, access func(*server.Request, *server.Tool) bool) *server.Server {
	t.Helper()
	cfg := parse(t, file)
	cfg.Registerer = reg
	set, err := policy.New(cfg)
	require.NoError(t, err)
	if access == nil {
		access = func(*server.Request, *server.Tool) bool { return true }
	}
	srv := server.New(
		server.WithToolPolicy(set.ToolPolicy),
		server.WithToolAccess(func(req *server.Request, tl *server.Tool) bool { return access(req, tl) && set.ToolAccess(req, tl) }))
	ok := func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		return server.Text("ran"), nil
	}
	require.NoError(t, srv.AddTool(server.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)}, ok))
	require.NoError(t, srv.AddTool(server.Tool{Name: "sleep", InputSchema: json.RawMessage(`{"type":"object","properties":{"ms":{"type":"integer","minimum":0}},"required":["ms"]}`)}, ok))
	require.NoError(t, srv.AddTool(server.Tool{Name: "ping"}, ok))
	return srv
}

// as connects to srv as principal p.
func as(t testing.TB, srv *server.Server, p *auth.Principal) *mcptest.Client {
	t.Helper()
	return mcptest.Connect(t, srv, mcptest.WithServeContext(auth.ContextWithPrincipal(context.Background(), p)))
}

// toolNames returns the names of the tools c is shown, sorted.
func toolNames(c *mcptest.Client) []string {
	var names []string
	for _, tl := range c.ListTools() {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names
}

// TestIssuePolicies is the acceptance of issue 57 in process: sleep of
// 5000 ms refused without vigil.slow and allowed with it, 10 ms allowed;
// echo hidden from and refused to mallory, shown to and run for alice;
// each decision counted.
func TestIssuePolicies(t *testing.T) {
	reg := prometheus.NewRegistry()
	srv := newServer(t, issueFile, reg)
	alice := as(t, srv, &auth.Principal{Subject: "alice", Issuer: "https://as", ClientID: "c"})
	slow := as(t, srv, &auth.Principal{Subject: "bob", Issuer: "https://as", ClientID: "c", Scopes: []string{"vigil.slow"}})
	mallory := as(t, srv, &auth.Principal{Subject: "mallory", Issuer: "https://as", ClientID: "c"})

	_, e := alice.Call("tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 5000}})
	require.NotNil(t, e, "sleep 5000 without vigil.slow must be refused")
	assert.Equal(t, int64(protocol.CodeInvalidRequest), e.Code)
	assert.Equal(t, `denied by policy "tools.sleep"`, e.Message)
	assert.JSONEq(t, `{"authorization":{"reason":"insufficient_authorization"},"policy":"tools.sleep"}`, string(e.Data))
	assert.Equal(t, "ran", alice.CallTool("sleep", map[string]any{"ms": 10}).Text())
	assert.Equal(t, "ran", slow.CallTool("sleep", map[string]any{"ms": 5000}).Text())

	assert.Equal(t, []string{"echo", "ping", "sleep"}, toolNames(alice))
	assert.Equal(t, []string{"ping", "sleep"}, toolNames(mallory), "echo must be absent from mallory's tools/list")
	_, e = mallory.Call("tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "hi"}})
	require.NotNil(t, e, "echo must be refused to mallory")
	assert.Equal(t, `denied by policy "tools.echo"`, e.Message)
	assert.Equal(t, "ran", alice.CallTool("echo", map[string]any{"text": "hi"}).Text())
	assert.Equal(t, "ran", mallory.CallTool("ping", nil).Text(), "the default allows")

	for _, c := range []struct {
		policy, decision string
		want             float64
	}{
		{"tools.sleep", "deny", 1},
		{"tools.sleep", "allow", 2},
		{"tools.echo", "deny", 1},
		{"tools.echo", "allow", 1},
		{"default", "allow", 1},
		{"default", "deny", 0},
	} {
		got, err := testutil.GatherAndCount(reg, "mcp_server_policy_decisions_total")
		require.NoError(t, err)
		require.Equal(t, 6, got, "every series is pre-created")
		assert.InDelta(t, c.want, counterValue(t, reg, c.policy, c.decision), 0, "%s %s", c.policy, c.decision)
	}
}

func counterValue(t *testing.T, reg *prometheus.Registry, pol, decision string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["policy"] == pol && labels["decision"] == decision {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no series %s %s", pol, decision)
	return 0
}

// TestArgumentsAreValidFirst: a call whose arguments fail the schema is
// answered as such, and the policy does not decide it.
func TestArgumentsAreValidFirst(t *testing.T) {
	reg := prometheus.NewRegistry()
	srv := newServer(t, issueFile, reg)
	alice := as(t, srv, &auth.Principal{Subject: "alice"})
	res := alice.CallTool("sleep", map[string]any{"ms": "slow"})
	assert.True(t, res.IsError)
	assert.Contains(t, res.Text(), "invalid arguments")
	assert.Zero(t, counterValue(t, reg, "tools.sleep", "deny")+counterValue(t, reg, "tools.sleep", "allow"))
}

// TestFailsClosed: without a principal every policy denies, and hides its
// tool; an evaluation error (a missing argument, a missing claim) denies.
func TestFailsClosed(t *testing.T) {
	srv := newServerWith(t, `tools:
  echo: 'principal.claims.tenant == "a" || true'
  sleep: 'arguments.nope == 1'
`, nil, nil)
	anon := mcptest.Connect(t, srv)
	_, e := anon.Call("tools/call", map[string]any{"name": "ping"})
	assert.Nil(t, e, "no default: ping has no policy")
	assert.Equal(t, []string{"ping", "sleep"}, toolNames(anon), "no principal: echo hidden (sleep's policy reads arguments)")
	_, e = anon.Call("tools/call", map[string]any{"name": "echo", "arguments": map[string]any{}})
	require.NotNil(t, e, "no principal: denied")
	assert.Equal(t, `denied by policy "tools.echo"`, e.Message)
	alice := as(t, srv, &auth.Principal{Subject: "alice"})
	assert.Equal(t, "ran", alice.CallTool("echo", map[string]any{}).Text(), "|| true: a missing claim's error is absorbed, as CEL's || does")
	_, e = alice.Call("tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 1}})
	assert.NotNil(t, e, "a missing argument denies")
	srv = newServer(t, "tools:\n  echo: 'principal.claims.tenant == \"a\"'\n", nil)
	_, e = as(t, srv, &auth.Principal{Subject: "alice"}).Call("tools/call", map[string]any{"name": "echo", "arguments": map[string]any{}})
	assert.NotNil(t, e, "a missing claim denies")
	tenantA := as(t, srv, &auth.Principal{Subject: "carol", Claims: map[string]any{"tenant": "a"}})
	assert.Equal(t, "ran", tenantA.CallTool("echo", map[string]any{}).Text())
}

// TestCostLimit: a policy that would run too long is stopped and denies.
func TestCostLimit(t *testing.T) {
	srv := newServer(t, `tools:
  echo: '[1,2,3,4,5,6,7,8,9,10].all(a, [1,2,3,4,5,6,7,8,9,10].all(b, [1,2,3,4,5,6,7,8,9,10].all(c, [1,2,3,4,5,6,7,8,9,10].all(d, [1,2,3,4,5,6,7,8,9,10].all(e, a+b+c+d+e > 0)))))'
`, nil)
	alice := as(t, srv, &auth.Principal{Subject: "alice"})
	_, e := alice.Call("tools/call", map[string]any{"name": "echo", "arguments": map[string]any{}})
	assert.NotNil(t, e, "over the cost limit: denied")
}

// TestBadExpressions: each expression that cannot run fails New naming
// its line in the file and its position in the expression.
func TestBadExpressions(t *testing.T) {
	for _, c := range []struct{ file, want string }{
		{"default: 'true'\ntools:\n  echo: 'principal.subject !!= \"x\"'\n", `line 3: policy tools.echo: ERROR: <input>:1:19: Syntax error`},
		{"tools:\n  sleep: 'principal.subjct == \"x\"'\n", `line 2: policy tools.sleep: ERROR: <input>:1:10: undefined field 'subjct'`},
		{"default: 'principal.subject'\n", `line 1: policy default: the expression is of type string, not bool`},
		{"tools:\n  echo: 'arguments.n + 1'\n", `line 2: policy tools.echo: the expression is of type`},
		{"tools:\n  echo: 'principal.scopes == 3'\n", `line 2: policy tools.echo: ERROR: <input>:1:18: found no matching overload`},
	} {
		_, err := policy.New(parse(t, c.file))
		require.Error(t, err, c.file)
		assert.Contains(t, err.Error(), c.want, c.file)
	}
	_, err := policy.New(policy.Config{Tools: map[string]string{"echo": "nope("}})
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "policy tools.echo: ERROR: <input>:1:6"), err.Error())
}

// TestFileFormat: the file has default and tools, nothing else.
func TestFileFormat(t *testing.T) {
	for _, c := range []struct{ file, want string }{
		{"defaults: 'true'\n", `line 1: unknown key "defaults"`},
		{"tools:\n  echo: 'true'\n  echo: 'false'\n", "line 3: tool echo given twice"},
		{"tools: ['a']\n", "line 1: tools must map"},
		{"tools:\n  echo: [1]\n", "line 2: the policy of tool echo must be an expression"},
		{"- a\n", "line 1: a policy file is a mapping"},
	} {
		var cfg policy.Config
		err := yaml.Unmarshal([]byte(c.file), &cfg)
		require.Error(t, err, c.file)
		assert.Contains(t, err.Error(), c.want)
	}
	_, err := policy.New(policy.Config{Tools: map[string]string{"bad name": "true"}})
	assert.ErrorContains(t, err, `"bad name" is not a valid tool name`)
}

// TestVariables: every variable the package documents can be read.
func TestVariables(t *testing.T) {
	srv := newServer(t, `tools:
  echo: 'principal.issuer == "https://as" && principal.client_id == "c" && principal.actor == ["agent", "bot"] && tool.name == "echo" && request.era == "2025" && request.session != "" && request.transport == ""'
  sleep: 'arguments.ms == 1 && tool.annotations == {}'
`, nil)
	alice := as(t, srv, &auth.Principal{Subject: "alice", Issuer: "https://as", ClientID: "c", Actors: []string{"agent", "bot"}})
	assert.Equal(t, "ran", alice.CallTool("echo", map[string]any{}).Text())
	assert.Equal(t, "ran", alice.CallTool("sleep", map[string]any{"ms": 1}).Text())
}

// TestListDecisionFollowsTheToken: a new token of the same principal key
// (the same user and client) with other claims is decided again, not
// answered from the cache.
func TestListDecisionFollowsTheToken(t *testing.T) {
	srv := newServer(t, "tools:\n  echo: '\"echo\" in principal.scopes'\n", nil)
	before := as(t, srv, &auth.Principal{Subject: "alice", Issuer: "https://as", ClientID: "c"})
	assert.NotContains(t, toolNames(before), "echo")
	assert.NotContains(t, toolNames(before), "echo", "from the cache")
	after := as(t, srv, &auth.Principal{Subject: "alice", Issuer: "https://as", ClientID: "c", Scopes: []string{"echo"}})
	assert.Contains(t, toolNames(after), "echo")
}

// TestPolicyReadingArgumentsDoesNotHide: a policy over the arguments
// cannot decide tools/list, which lists its tool.
func TestPolicyReadingArgumentsDoesNotHide(t *testing.T) {
	srv := newServer(t, "tools:\n  sleep: 'arguments.ms < 10 && principal.subject == \"nobody\"'\n", nil)
	alice := as(t, srv, &auth.Principal{Subject: "alice"})
	assert.Contains(t, toolNames(alice), "sleep")
}

// TestDecisionOnSpan: ToolPolicy sets the policy and its decision on the span
// of the call's context (here a middleware's, as package middleware's
// tracing starts one), for an allow and for a denial.
func TestDecisionOnSpan(t *testing.T) {
	set, err := policy.New(parse(t, issueFile))
	require.NoError(t, err)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	spans := func(next server.Handler) server.Handler {
		return func(ctx context.Context, req *server.Request) (any, error) {
			ctx, span := tp.Tracer("test").Start(ctx, req.Method)
			defer span.End()
			return next(ctx, req)
		}
	}
	srv := server.New(server.WithToolPolicy(set.ToolPolicy), server.WithMiddleware(spans))
	ok := func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		return server.Text("ran"), nil
	}
	require.NoError(t, srv.AddTool(server.Tool{Name: "sleep"}, ok))
	alice := as(t, srv, &auth.Principal{Subject: "alice"})
	_, e := alice.Call("tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 10}})
	require.Nil(t, e)
	_, e = alice.Call("tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 5000}})
	require.NotNil(t, e)
	var got []string
	for _, s := range rec.Ended() {
		if s.Name() != "tools/call" {
			continue
		}
		attrs := map[string]string{}
		for _, kv := range s.Attributes() {
			attrs[string(kv.Key)] = kv.Value.AsString()
		}
		got = append(got, attrs["vigil.policy"]+" "+attrs["vigil.policy.decision"])
	}
	assert.Equal(t, []string{"tools.sleep allow", "tools.sleep deny"}, got)
}

// TestLogsBounded: a denial is logged at info naming the tool, policy and
// subject, with an evaluation error cut to its bound (CEL may quote what
// the client sent), never the arguments themselves.
func TestLogsBounded(t *testing.T) {
	var logs strings.Builder
	cfg := parse(t, "tools:\n  echo: '\"x\".matches(arguments.text)'\n") // a bad pattern's error quotes it
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	set, err := policy.New(cfg)
	require.NoError(t, err)
	srv := server.New(server.WithToolPolicy(set.ToolPolicy))
	ok := func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		return server.Text("ran"), nil
	}
	require.NoError(t, srv.AddTool(server.Tool{Name: "echo"}, ok))
	secret := "(" + strings.Repeat("s3cret", 200)
	_, e := as(t, srv, &auth.Principal{Subject: "alice"}).Call("tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": secret}})
	require.NotNil(t, e)
	out := logs.String()
	assert.Contains(t, out, `msg="policy: tools/call deny" tool=echo policy=tools.echo decision=deny`)
	assert.Contains(t, out, "subject=alice")
	assert.NotContains(t, out, secret)
	assert.Less(t, len(out), 1024, out)
}

// lockedBuffer is a bytes.Buffer safe for concurrent use.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestDenialAudited: the audit line of a denied call names the policy;
// an allowed call's has none.
func TestDenialAudited(t *testing.T) {
	set, err := policy.New(parse(t, issueFile))
	require.NoError(t, err)
	var audit lockedBuffer
	srv := server.New(append(auditOptions(t, &audit), server.WithToolPolicy(set.ToolPolicy))...)
	ok := func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		return server.Text("ran"), nil
	}
	require.NoError(t, srv.AddTool(server.Tool{Name: "echo"}, ok))
	mallory := as(t, srv, &auth.Principal{Subject: "mallory"})
	_, e := mallory.Call("tools/call", map[string]any{"name": "echo", "arguments": map[string]any{}})
	require.NotNil(t, e)
	alice := as(t, srv, &auth.Principal{Subject: "alice"})
	assert.Equal(t, "ran", alice.CallTool("echo", map[string]any{}).Text())
	require.NoError(t, mallory.Close())
	require.NoError(t, alice.Close())
	require.NoError(t, srv.Shutdown(t.Context())) // returns once the handlers, which write the lines, have returned
	var lines []auditLine
	for line := range strings.Lines(audit.String()) {
		var rec auditLine
		require.NoError(t, json.Unmarshal([]byte(line), &rec))
		lines = append(lines, rec)
	}
	require.Len(t, lines, 2, audit.String())
	slices.SortFunc(lines, func(a, b auditLine) int { return strings.Compare(b.Subject, a.Subject) })
	assert.Equal(t, "mallory", lines[0].Subject)
	assert.Equal(t, "tools.echo", lines[0].Policy)
	assert.Equal(t, int64(protocol.CodeInvalidRequest), lines[0].Code)
	assert.Equal(t, "alice", lines[1].Subject)
	assert.Empty(t, lines[1].Policy)
}

// TestAmbiguousArgumentsRefused: arguments refused before the policy for
// names equal under case folding are answered with -32602 naming the
// members (cut to their bound) and the JSON pointer of their object,
// logged at info without them, and audited naming the policy. Names that
// the input schema declares only in anyOf's required count; a schema that
// declares none leaves only two such names in one object refused; a
// policy that reads no arguments refuses nothing.
func TestAmbiguousArgumentsRefused(t *testing.T) {
	var logs, audit lockedBuffer
	cfg := parse(t, "tools:\n  refund: 'arguments.amount < 100'\n  any: '!has(arguments.amount)'\n  bare: '!has(arguments.amount)'\n  echo: 'principal.subject == \"alice\"'\n")
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	set, err := policy.New(cfg)
	require.NoError(t, err)
	srv := server.New(append(auditOptions(t, &audit), server.WithToolPolicy(set.ToolPolicy))...)
	ok := func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		return server.Text("ran"), nil
	}
	require.NoError(t, srv.AddTool(server.Tool{Name: "refund", InputSchema: json.RawMessage(`{"type":"object","properties":{"amount":{"type":"integer"}}}`)}, ok))
	require.NoError(t, srv.AddTool(server.Tool{Name: "any", InputSchema: json.RawMessage(`{"type":"object","anyOf":[{"required":["amount"]},{"required":["id"]}]}`)}, ok))
	require.NoError(t, srv.AddTool(server.Tool{Name: "bare"}, ok))
	require.NoError(t, srv.AddTool(server.Tool{Name: "echo"}, ok))
	alice := as(t, srv, &auth.Principal{Subject: "alice"})
	long := strings.Repeat("b", 10000)
	for _, c := range []struct {
		tool, args, want string
	}{
		{"refund", `{"amount":1,"Amount":500}`, `invalid arguments for tool "refund": member "Amount" is the input schema's property "amount" under case folding; refused before policy "tools.refund"`},
		{"refund", `{"amount":1,"meta":{"a/b~c":[{"x":1,"X":2}]}}`, `invalid arguments for tool "refund": members "x" and "X" of "/meta/a~1b~0c/0" are one name under case folding; refused before policy "tools.refund"`},
		{"refund", `{"amount":1,"` + long + `":1,"` + strings.ToUpper(long) + `":2}`, `invalid arguments for tool "refund": members "` + long[:64] + `…" and "` + strings.ToUpper(long[:64]) + `…" are one name under case folding; refused before policy "tools.refund"`},
		{"any", `{"id":1,"Amount":500}`, `invalid arguments for tool "any": member "Amount" is the input schema's property "amount" under case folding; refused before policy "tools.any"`},
		{"bare", `{"Amount":500}`, "ran"},
		{"bare", `{"amount":1,"AMOUNT":500}`, `invalid arguments for tool "bare": members "amount" and "AMOUNT" are one name under case folding; refused before policy "tools.bare"`},
		{"echo", `{"text":1,"Text":2}`, "ran"},
	} {
		res, e := alice.Call("tools/call", map[string]any{"name": c.tool, "arguments": json.RawMessage(c.args)})
		if c.want == "ran" {
			require.Nil(t, e, c.args)
			assert.Contains(t, string(res), `"text":"ran"`, c.args)
			continue
		}
		require.NotNil(t, e, c.args)
		assert.Equal(t, int64(protocol.CodeInvalidParams), e.Code, c.args)
		assert.Equal(t, c.want, e.Message, c.args)
	}
	require.NoError(t, alice.Close())
	require.NoError(t, srv.Shutdown(t.Context()))
	assert.Contains(t, logs.String(), `msg="policy: tools/call deny" tool=refund policy=tools.refund decision=deny`)
	assert.Contains(t, logs.String(), `error="arguments refused: member names equal under case folding"`)
	assert.NotContains(t, logs.String(), "Amount")
	var policies []string
	for line := range strings.Lines(audit.String()) {
		var rec auditLine
		require.NoError(t, json.Unmarshal([]byte(line), &rec))
		if rec.Code == int64(protocol.CodeInvalidParams) {
			policies = append(policies, rec.Policy)
		}
	}
	slices.Sort(policies)
	assert.Equal(t, []string{"tools.any", "tools.bare", "tools.refund", "tools.refund", "tools.refund"}, policies)
}

// auditOptions returns the server options of an instrumentation that
// writes its audit log to w.
func auditOptions(t *testing.T, w io.Writer) []server.Option {
	t.Helper()
	inst, err := middleware.NewInstrumentation(middleware.WithAuditLog(w))
	require.NoError(t, err)
	return inst.ServerOptions()
}

// auditLine is what these tests read of a line of the audit log.
type auditLine struct {
	Subject string `json:"subject"`
	Policy  string `json:"policy"`
	Code    int64  `json:"code"`
}
