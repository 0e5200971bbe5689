package policy_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/middleware/auth"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// closedInput is the input of the tools of TestPolicySeesWhatTheHandlerDoes.
type closedInput struct {
	Amount float64 `json:"amount"`
}

// decodeLikeSleep reads amount as vigil's sleep reads ms: json.Unmarshal
// into a struct, which matches member names without regard to case.
func decodeLikeSleep(raw json.RawMessage) (float64, error) {
	var in struct {
		Amount *int64 `json:"amount"`
	}
	if err := json.Unmarshal(raw, &in); err != nil || in.Amount == nil {
		return 0, errors.New("pay needs {\"amount\": an integer}")
	}
	return float64(*in.Amount), nil
}

// decodeLikeTyped reads amount as AddTypedTool decodes closedInput.
func decodeLikeTyped(raw json.RawMessage) (float64, error) {
	var in closedInput
	err := json.Unmarshal(raw, &in)
	return in.Amount, err
}

// outcome says how a tools/call of the agreement test was answered:
// "denied" by the policy, "ambiguous" names refused before it, "invalid"
// arguments (the schema or the typed decoding), "refused" by the
// handler's own decoding, "ran N" when the handler acted on amount N,
// "parse error" for a frame that is no JSON.
func outcome(t *testing.T, resp *transport.Response) string {
	t.Helper()
	if e := resp.Error; e != nil {
		switch {
		case e.Code == int64(protocol.CodeInvalidRequest) && strings.HasPrefix(e.Message, "denied by policy"):
			return "denied"
		case e.Code == int64(protocol.CodeParseError):
			return "parse error"
		case e.Code == int64(protocol.CodeInvalidParams) && strings.Contains(e.Message, "under case folding"):
			return "ambiguous"
		}
		return fmt.Sprintf("error %d %s", e.Code, e.Message)
	}
	var res struct {
		Content []struct{ Text string }
		IsError bool
	}
	require.NoError(t, json.Unmarshal(resp.Result, &res), "%s", resp.Result)
	require.Len(t, res.Content, 1, "%s", resp.Result)
	switch text := res.Content[0].Text; {
	case strings.HasPrefix(text, "invalid arguments"):
		return "invalid"
	case res.IsError:
		return "refused"
	default:
		return "ran " + text
	}
}

// TestPolicySeesWhatTheHandlerDoes is a probe of issue 66's review that
// held: the policy 'arguments.amount <= 100' allows a call only when the
// handler acts on an amount of at most 100, for repeated, escaped and
// case-changed members and odd numbers, with both ways a Go tool reads
// its arguments under a closed schema (additionalProperties false, as
// vigil's tools and every inferred schema have): json.Unmarshal in the
// handler, as vigil's sleep, and AddTypedTool. Each case's answer is
// given; whatever the handler ran on is allowed, and whatever the policy
// denied is an amount the handler would not have been allowed either.
func TestPolicySeesWhatTheHandlerDoes(t *testing.T) {
	srv := newServerWith(t, "tools:\n  pay: 'arguments.amount <= 100'\n  pay_typed: 'arguments.amount <= 100'\n", nil, nil)
	require.NoError(t, srv.AddTool(server.Tool{
		Name:        "pay",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"amount":{"type":"integer"}},"required":["amount"],"additionalProperties":false}`),
	}, func(_ context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
		amount, err := decodeLikeSleep(req.Arguments)
		if err != nil {
			return nil, err
		}
		return server.Text(strconv.FormatFloat(amount, 'g', -1, 64)), nil
	}))
	require.NoError(t, server.AddTypedTool(srv, server.Tool{Name: "pay_typed"}, func(_ context.Context, _ *server.CallToolRequest, in closedInput) (string, error) {
		return strconv.FormatFloat(in.Amount, 'g', -1, 64), nil
	}))
	decoders := map[string]func(json.RawMessage) (float64, error){"pay": decodeLikeSleep, "pay_typed": decodeLikeTyped}
	alice := as(t, srv, &auth.Principal{Subject: "alice"})

	for i, c := range []struct{ args, pay, typed string }{
		// Repeated members: the last one wins, for the policy as for the handler.
		{`{"amount":1,"amount":1000000}`, "denied", "denied"},
		{`{"amount":1000000,"amount":1}`, "ran 1", "ran 1"},
		{`{"amount":1 , "amount" : 1000000}`, "denied", "denied"},
		{`{"amount":1,"amount":null}`, "invalid", "invalid"},
		// Escaped names are the names they decode to.
		{`{"am\u006funt":1000000}`, "denied", "denied"},
		{`{"amount":1,"am\u006funt":1000000}`, "denied", "denied"},
		{`{"am\u006funt":1,"amount":1000000}`, "denied", "denied"},
		{`{"amount":1000000,"\u0061mount":1}`, "ran 1", "ran 1"},
		// Names of another case, which json.Unmarshal would match to amount.
		{`{"Amount":1000000}`, "invalid", "invalid"},
		{`{"amount":1,"Amount":1000000}`, "invalid", "invalid"},
		{`{"AMOUNT":1000000,"amount":1}`, "invalid", "invalid"},
		{`{"amount":1,"amounT":1000000}`, "invalid", "invalid"},
		{`{"amount":1,"\u0041mount":1000000}`, "invalid", "invalid"},
		{`{"amount":1,"amo\u212Ant":1000000}`, "invalid", "invalid"}, // KELVIN SIGN, which folds to k
		{`{"amount":1,"amount\u0000":1000000}`, "invalid", "invalid"},
		// Odd numbers.
		{`{"amount":100}`, "ran 100", "ran 100"},
		{`{"amount":101}`, "denied", "denied"},
		{`{"amount":1e2}`, "refused", "ran 100"},
		{`{"amount":1E3}`, "denied", "denied"},
		{`{"amount":10000e-2}`, "refused", "ran 100"},
		{`{"amount":-0}`, "ran 0", "ran -0"},
		{`{"amount":1.0}`, "refused", "ran 1"},
		{`{"amount":100.00000000000001}`, "invalid", "denied"},
		{`{"amount":100.000000000000001}`, "refused", "ran 100"}, // 100 as a float64, for both
		{`{"amount":100000000000000000000}`, "denied", "denied"},
		{`{"amount":9223372036854775808}`, "denied", "denied"},
		{`{"amount":-9223372036854775809}`, "refused", "ran -9.223372036854776e+18"},
		{`{"amount":1e400}`, "invalid", "invalid"},
		{`{"amount":-1e400}`, "invalid", "invalid"},
		{`{"amount":1e-400}`, "refused", "ran 0"},
		{`{"amount":0x10}`, "parse error", "parse error"},
		{`{"amount":"50"}`, "invalid", "invalid"},
	} {
		for tool, want := range map[string]string{"pay": c.pay, "pay_typed": c.typed} {
			id := int64(100 + 2*i)
			if tool == "pay_typed" {
				id++
			}
			alice.SendFrame(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, tool, c.args))
			resp := alice.RecvResponse()
			got := outcome(t, resp)
			if got != "parse error" {
				assert.Equal(t, transport.Int64ID(id), resp.ID, "%s %s", tool, c.args)
			}
			assert.Equal(t, want, got, "%s %s", tool, c.args)
			if ran, ok := strings.CutPrefix(got, "ran "); ok {
				amount, err := strconv.ParseFloat(ran, 64)
				require.NoError(t, err)
				assert.LessOrEqual(t, amount, 100.0, "%s %s: the handler acted on an amount the policy forbids", tool, c.args)
			}
			if got == "denied" {
				amount, err := decoders[tool](json.RawMessage(c.args))
				assert.True(t, err != nil || amount > 100, "%s %s: denied, yet the handler reads %v", tool, c.args, amount)
			}
		}
	}

	// The arguments member itself repeated: the last one is the call's.
	for id, c := range map[int64]struct{ params, want string }{
		200: {`{"name":"pay","arguments":{"amount":1},"arguments":{"amount":1000000}}`, "denied"},
		201: {`{"name":"pay","arguments":{"amount":1000000},"arguments":{"amount":1}}`, "ran 1"},
		202: {`{"name":"pay","\u0061rguments":{"amount":1000000},"arguments":{"amount":7}}`, "ran 7"},
		203: {`{"name":"pay","arguments":{"amount":7},"\u0061rguments":{"amount":1000000}}`, "denied"},
	} {
		alice.SendFrame(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, id, c.params))
		assert.Equal(t, c.want, outcome(t, alice.RecvResponseTo(id)), c.params)
	}
}

// decodeBasket reads basket.tokens as a handler of a nested input would:
// json.Unmarshal into a struct; missing tokens are 0.
func decodeBasket(raw json.RawMessage) (float64, error) {
	var in struct {
		Basket struct {
			Tokens int64 `json:"tokens"`
		} `json:"basket"`
	}
	err := json.Unmarshal(raw, &in)
	return float64(in.Basket.Tokens), err
}

// TestPolicySeesWhatTheHandlerDoesWithOpenSchemas is
// TestPolicySeesWhatTheHandlerDoes for tools whose input schema is open
// (members it does not declare are valid), where json.Unmarshal's
// matching of names without regard to case, Kelvin sign and long s
// included, would let a handler act on a member the policy never read:
// such arguments are refused with -32602 before the policy runs, counted
// as denials, and names that are not ambiguous still reach it. open is
// AddTool with 'arguments.amount <= 100'; typed, AddTypedTool with an
// explicit open schema, and optional, AddTool, have '!has(...) || ...';
// basket reads a nested member likewise, in names with a k and an s.
func TestPolicySeesWhatTheHandlerDoesWithOpenSchemas(t *testing.T) {
	reg := prometheus.NewRegistry()
	srv := newServerWith(t, `tools:
  open: 'arguments.amount <= 100'
  typed: '!has(arguments.amount) || arguments.amount <= 100'
  optional: '!has(arguments.amount) || arguments.amount <= 100'
  basket: '!has(arguments.basket) || !has(arguments.basket.tokens) || arguments.basket.tokens <= 100'
`, reg, nil)
	openSchema := json.RawMessage(`{"type":"object","properties":{"amount":{"type":"integer"},"note":{"type":"string"}}}`)
	pay := func(_ context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
		amount, err := decodeLikeSleep(req.Arguments)
		if err != nil {
			return nil, err
		}
		return server.Text(strconv.FormatFloat(amount, 'g', -1, 64)), nil
	}
	require.NoError(t, srv.AddTool(server.Tool{Name: "open", InputSchema: openSchema}, pay))
	require.NoError(t, srv.AddTool(server.Tool{Name: "optional", InputSchema: openSchema}, pay))
	require.NoError(t, server.AddTypedTool(srv, server.Tool{Name: "typed", InputSchema: openSchema}, func(_ context.Context, _ *server.CallToolRequest, in closedInput) (string, error) {
		return strconv.FormatFloat(in.Amount, 'g', -1, 64), nil
	}))
	require.NoError(t, srv.AddTool(server.Tool{
		Name:        "basket",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"basket":{"type":"object","properties":{"tokens":{"type":"integer"}}}}}`),
	}, func(_ context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
		tokens, err := decodeBasket(req.Arguments)
		if err != nil {
			return nil, err
		}
		return server.Text(strconv.FormatFloat(tokens, 'g', -1, 64)), nil
	}))
	decoders := map[string]func(json.RawMessage) (float64, error){"open": decodeLikeSleep, "optional": decodeLikeSleep, "typed": decodeLikeTyped, "basket": decodeBasket}
	alice := as(t, srv, &auth.Principal{Subject: "alice"})

	const amb = "ambiguous"
	denials := map[string]float64{} // by tool: denied or ambiguous
	id := int64(100)
	call := func(tool, args string) string {
		id++
		alice.SendFrame(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, tool, args))
		resp := alice.RecvResponseTo(id)
		got := outcome(t, resp)
		if ran, ok := strings.CutPrefix(got, "ran "); ok {
			amount, err := strconv.ParseFloat(ran, 64)
			require.NoError(t, err)
			assert.LessOrEqual(t, amount, 100.0, "%s %s: the handler acted on an amount the policy forbids", tool, args)
		}
		switch got {
		case "denied":
			amount, err := decoders[tool](json.RawMessage(args))
			assert.True(t, err != nil || amount > 100, "%s %s: denied, yet the handler reads %v", tool, args, amount)
			denials[tool]++
		case amb:
			assert.LessOrEqual(t, len(resp.Error.Message), 512, resp.Error.Message)
			denials[tool]++
		}
		return got
	}

	type want struct{ open, typed, optional string }
	for _, c := range []struct {
		args string
		want want
	}{
		// A member that folds to the declared amount, beside it or alone.
		{`{"amount":1,"Amount":1000000}`, want{amb, amb, amb}},
		{`{"Amount":1000000,"amount":1}`, want{amb, amb, amb}},
		{`{"amount":1,"AMOUNT":1000000}`, want{amb, amb, amb}},
		{`{"amount":1,"amounT":1000000}`, want{amb, amb, amb}},
		{`{"amount":1,"\u0041mount":1000000}`, want{amb, amb, amb}},
		{`{"Amount":1000000}`, want{amb, amb, amb}},
		{`{"AMOUNT":1}`, want{amb, amb, amb}},
		// Undeclared members that fold alike, at any depth.
		{`{"amount":1,"meta":{"x":1,"X":2}}`, want{amb, amb, amb}},
		{`{"amount":1,"list":[{"k":1,"\u212A":2}]}`, want{amb, amb, amb}},
		{`{"amount":1,"\u00e9":1,"\u00c9":2}`, want{amb, amb, amb}},
		{`{"amount":1,"Extra":1,"EXTRA":2}`, want{amb, amb, amb}},
		// Legitimate arguments still reach the policy, then the handler.
		{`{"amount":100}`, want{"ran 100", "ran 100", "ran 100"}},
		{`{"amount":101}`, want{"denied", "denied", "denied"}},
		{`{"amount":5,"note":"x","Other":1,"nested":{"a":1,"B":2},"list":[{"k":1},{"K":2}]}`, want{"ran 5", "ran 5", "ran 5"}},
		{`{"amount":1,"amountx":5,"amoun":2,"\u00e9":1,"\u00c92":1}`, want{"ran 1", "ran 1", "ran 1"}},
		{`{"amount":1,"amo\u212Ant":1000000}`, want{"ran 1", "ran 1", "ran 1"}}, // KELVIN SIGN folds to k: "amoknt", for the handler too
		{`{"amount":1,"amount":1000000}`, want{"denied", "denied", "denied"}},
		{`{"amount":1000000,"amount":1}`, want{"ran 1", "ran 1", "ran 1"}},
		{`{"amount":1,"am\u006funt":7}`, want{"ran 7", "ran 7", "ran 7"}},
		{`{}`, want{"denied", "ran 0", "refused"}},
	} {
		for tool, want := range map[string]string{"open": c.want.open, "typed": c.want.typed, "optional": c.want.optional} {
			assert.Equal(t, want, call(tool, c.args), "%s %s", tool, c.args)
		}
	}
	for _, c := range []struct{ args, want string }{
		{`{"basket":{"tokens":1,"Tokens":1000000}}`, amb},
		{`{"basket":{"tokens":1,"TOKENS":1000000}}`, amb},
		{`{"basket":{"tokens":1,"to\u212Aens":1000000}}`, amb}, // KELVIN SIGN, which folds to k
		{`{"basket":{"tokens":1,"toKens":1000000}}`, amb},      // the same, unescaped
		{`{"basket":{"tokens":1,"token\u017F":1000000}}`, amb}, // LATIN SMALL LETTER LONG S, which folds to s
		{`{"basket":{"tokens":1000000,"to\u212Aen\u017F":1}}`, amb},
		{`{"Basket":{"tokens":1000000}}`, amb},
		{`{"ba\u017F\u212Aet":{"tokens":1000000}}`, amb},
		{`{"basket":{"tokens":1},"other":[{"a":{"b":1}}]}`, "ran 1"},
		{`{"basket":{"tokens":101}}`, "denied"},
		{`{"basket":{"tokens":1,"tokens":1000000}}`, "denied"},
	} {
		assert.Equal(t, c.want, call("basket", c.args), "basket %s", c.args)
	}
	for tool, n := range denials {
		assert.InDelta(t, n, counterValue(t, reg, "tools."+tool, "deny"), 0, "%s: a refusal is counted as a denial", tool)
	}
}
