package debugpage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/vigil-mcp/vigil/server"
)

// addTestTools registers the tools the tests call: echo, which returns its
// text (a tool error without one), and sleep, which waits ms milliseconds
// or until the call is cancelled.
func addTestTools(srv *server.Server) error {
	return errors.Join(
		srv.AddTool(server.Tool{Name: "echo"}, func(_ context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
			var in struct {
				Text *string `json:"text"`
			}
			if err := json.Unmarshal(req.Arguments, &in); err != nil || in.Text == nil {
				return nil, errors.New(`echo needs {"text": string}`)
			}
			return server.Text(*in.Text), nil
		}),
		srv.AddTool(server.Tool{Name: "sleep"}, func(ctx context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
			var in struct {
				MS int64 `json:"ms"`
			}
			if err := json.Unmarshal(req.Arguments, &in); err != nil {
				return nil, err
			}
			t := time.NewTimer(time.Duration(in.MS) * time.Millisecond)
			defer t.Stop()
			select {
			case <-t.C:
				return server.Text(fmt.Sprintf("slept %d ms", in.MS)), nil
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
		}),
	)
}

// mountPage returns a mux that serves h at /debug/vigil, as cmd/vigil
// mounts it.
func mountPage(h http.Handler) *http.ServeMux {
	mux := http.NewServeMux()
	page := http.StripPrefix("/debug/vigil", h)
	for _, pattern := range []string{"GET /debug/vigil", "GET /debug/vigil/trace/{id}", "GET /debug/vigil/style.css", "GET /debug/vigil/favicon.svg"} {
		mux.Handle(pattern, page)
	}
	return mux
}
