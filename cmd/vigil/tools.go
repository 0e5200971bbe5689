package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/vigil-mcp/vigil/server"
)

func addDemoTools(srv *server.Server) error {
	return errors.Join(
		srv.AddTool(server.Tool{
			Name:        "echo",
			Description: "Returns the text it is given.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","description":"the text to return"}},"required":["text"],"additionalProperties":false}`),
		}, echo),
		srv.AddTool(server.Tool{
			Name:        "sleep",
			Description: "Waits the given number of milliseconds, or until the call is cancelled.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"ms":{"type":"integer","minimum":0,"description":"how long to wait"}},"required":["ms"],"additionalProperties":false}`),
		}, sleep),
		srv.AddTool(server.Tool{
			Name:        "countdown",
			Description: "Counts down from the given number, reporting progress at each step, then returns \"liftoff\".",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"from":{"type":"integer","minimum":0,"maximum":100,"description":"where to start counting down"}},"required":["from"],"additionalProperties":false}`),
		}, countdown),
	)
}

func echo(_ context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
	var in struct {
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(req.Arguments, &in); err != nil || in.Text == nil {
		return nil, errors.New(`echo needs {"text": string}`)
	}
	return server.Text(*in.Text), nil
}

func sleep(ctx context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
	var in struct {
		MS *int64 `json:"ms"`
	}
	if err := json.Unmarshal(req.Arguments, &in); err != nil || in.MS == nil || *in.MS < 0 {
		return nil, errors.New(`sleep needs {"ms": a non-negative integer}`)
	}
	d := time.Duration(*in.MS) * time.Millisecond
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return server.Text(fmt.Sprintf("slept %d ms", *in.MS)), nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// countdownStep is the pause between two steps of countdown: long enough
// that no progress update falls within the server's progress interval.
const countdownStep = 15 * time.Millisecond

// countdown counts down from "from" (at most 100), reporting progress at
// each step (progress i of from, message "n left"), and returns "liftoff".
// It stops early, with the cancellation cause, when the call is cancelled.
func countdown(ctx context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
	var in struct {
		From *int64 `json:"from"`
	}
	if err := json.Unmarshal(req.Arguments, &in); err != nil || in.From == nil || *in.From < 0 || *in.From > 100 {
		return nil, errors.New(`countdown needs {"from": an integer from 0 to 100}`)
	}
	from := *in.From
	t := time.NewTimer(countdownStep)
	defer t.Stop()
	for i := int64(1); i <= from; i++ {
		select {
		case <-t.C:
			t.Reset(countdownStep)
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
		if err := server.ReportProgress(ctx, float64(i), float64(from), fmt.Sprintf("%d left", from-i)); err != nil {
			return nil, err
		}
	}
	return server.Text("liftoff"), nil
}
