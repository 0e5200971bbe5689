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
