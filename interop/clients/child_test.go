package clients

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sync"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Child processes: the test binary run again with childEnv set to one of
// these. A client child connects to $VIGIL_CLIENTS_URL in the era
// $VIGIL_CLIENTS_ERA, says "get-open" on stdout once its standalone GET
// stream is open (2025 era), "calling" once it sent tools/call sleep, and
// then waits in the call for the test to kill it.
const (
	childGoSDK = "go-sdk"
	childMCPGo = "mcp-go"
)

// runChild runs the child process mode names and returns its exit status.
func runChild(mode string) int {
	url, era := os.Getenv("VIGIL_CLIENTS_URL"), os.Getenv("VIGIL_CLIENTS_ERA")
	ctx := context.Background()
	var err error
	switch mode {
	case childGoSDK:
		err = goSDKChild(ctx, url, era)
	case childMCPGo:
		err = mcpGoChild(ctx, url, era)
	case childGoSDKStdio:
		err = goSDKStdioChild(ctx, era)
	case childPaged:
		if err = servePagedStdio(); err == nil {
			return 0
		}
	default:
		err = fmt.Errorf("unknown %s %q", childEnv, mode)
	}
	fmt.Fprintln(os.Stderr, "child:", err)
	return 1
}

// say writes line to stdout, for the test that reads it.
func say(line string) {
	_, _ = fmt.Fprintln(os.Stdout, line)
}

// getWatcher is an http.RoundTripper that says "get-open" once a GET (the
// client's standalone SSE stream) got its 200 response headers. It watches
// the client's own requests; it changes none.
type getWatcher struct{ once sync.Once }

func (g *getWatcher) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil && r.Method == http.MethodGet && resp.StatusCode == http.StatusOK {
		g.once.Do(func() { say("get-open") })
	}
	return resp, err
}

func goSDKChild(ctx context.Context, url, era string) error {
	c := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-child", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: &getWatcher{}}},
		&mcp.ClientSessionOptions{ProtocolVersion: era})
	if err != nil {
		return err
	}
	say("calling")
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 60000}})
	return err
}

func mcpGoChild(ctx context.Context, url, era string) error {
	tr, err := transport.NewStreamableHTTP(url, transport.WithContinuousListening(), //nolint:staticcheck // SA1019: the 2025 era has the GET stream
		transport.WithHTTPBasicClient(&http.Client{Transport: &getWatcher{}}))
	if err != nil {
		return err
	}
	c := mcpclient.NewClient(tr)
	if err := c.Start(ctx); err != nil {
		return err
	}
	init := mcpgo.InitializeRequest{}
	init.Params.ProtocolVersion = era
	init.Params.ClientInfo = mcpgo.Implementation{Name: "mcp-go-child", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		return err
	}
	say("calling")
	req := mcpgo.CallToolRequest{}
	req.Params.Name = "sleep"
	req.Params.Arguments = map[string]any{"ms": 60000}
	_, err = c.CallTool(ctx, req)
	return err
}
