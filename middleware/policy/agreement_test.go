package policy_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

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
// "denied" by the policy, "invalid" arguments (the schema or the typed
// decoding), "refused" by the handler's own decoding, "ran N" when the
// handler acted on amount N, "parse error" for a frame that is no JSON.
func outcome(t *testing.T, resp *transport.Response) string {
	t.Helper()
	if e := resp.Error; e != nil {
		switch {
		case e.Code == int64(protocol.CodeInvalidRequest) && strings.HasPrefix(e.Message, "denied by policy"):
			return "denied"
		case e.Code == int64(protocol.CodeParseError):
			return "parse error"
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
