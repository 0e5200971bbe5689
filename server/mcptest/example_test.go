package mcptest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
)

// A test of your own tool: build the server as in production, connect a
// client over an in-memory pipe, call the tool and check its answer. In a
// test file the body below is that of func TestGreet(t *testing.T); Go runs
// Examples without a *testing.T, so a minimal stand-in plays t here.
func Example() {
	t := newExampleT()
	defer t.cleanup()

	type in struct {
		Name string `json:"name"`
	}
	srv := server.New()
	_ = srv.AddTool(server.Tool{Name: "greet", Description: "Greets someone."},
		func(_ context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
			var args in
			if err := json.Unmarshal(req.Arguments, &args); err != nil || args.Name == "" {
				return nil, errors.New("whom should I greet?")
			}
			return server.Text("hello, " + args.Name), nil
		})

	c := mcptest.Connect(t, srv)
	fmt.Println(c.ListTools()[0].Description)
	res := c.CallTool("greet", map[string]any{"name": "ada"})
	fmt.Println(res.Text(), res.IsError)
	res = c.CallTool("greet", nil)
	fmt.Println(res.Text(), res.IsError)
	// Output:
	// Greets someone.
	// hello, ada false
	// whom should I greet? true
}

// exampleT is the little of a *testing.T that mcptest uses.
type exampleT struct {
	testing.TB // not implemented: calling another method panics
	ctx        context.Context
	cancel     context.CancelFunc
	cleanups   []func()
}

func newExampleT() *exampleT {
	ctx, cancel := context.WithCancel(context.Background())
	return &exampleT{ctx: ctx, cancel: cancel}
}

func (t *exampleT) Helper()                           {}
func (t *exampleT) Context() context.Context          { return t.ctx }
func (t *exampleT) Cleanup(f func())                  { t.cleanups = append(t.cleanups, f) }
func (t *exampleT) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
func (t *exampleT) Errorf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
func (t *exampleT) cleanup() {
	t.cancel()
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
}
