package clients

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	vigil "github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/stdio"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// pagedItems is how many tools, resources, templates and prompts the paged
// server has: three pages of two.
const pagedItems = 5

// childPaged turns the test binary into the paged server over stdio.
const childPaged = "paged-stdio"

// pagedServer returns a Vigil server whose lists come two items a page
// (vigil.WithPageSize(2)), with pagedItems tools, resources, resource
// templates and prompts: item0 ... item4 of each.
func pagedServer() (*vigil.Server, error) {
	s := vigil.New(vigil.WithImplementation("vigil-paged", "dev"), vigil.WithPageSize(2))
	var errs []error
	for i := range pagedItems {
		name := fmt.Sprintf("item%d", i)
		errs = append(errs,
			s.AddTool(vigil.Tool{Name: name, Description: "Returns its name.", InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false}`)},
				func(context.Context, *vigil.CallToolRequest) (*vigil.CallToolResult, error) {
					return vigil.Text(name), nil
				}),
			s.AddResource(vigil.Resource{URI: "paged://" + name, Name: name, MIMEType: "text/plain"},
				func(context.Context, *vigil.ReadResourceRequest) (*vigil.ReadResourceResult, error) {
					return &vigil.ReadResourceResult{Contents: []*vigil.ResourceContents{{URI: "paged://" + name, MIMEType: "text/plain", Text: name}}}, nil
				}),
			s.AddResourceTemplate(vigil.ResourceTemplate{URITemplate: "paged://" + name + "/{id}", Name: name, MIMEType: "text/plain"},
				func(_ context.Context, req *vigil.ReadResourceRequest) (*vigil.ReadResourceResult, error) {
					return &vigil.ReadResourceResult{Contents: []*vigil.ResourceContents{{URI: req.URI, MIMEType: "text/plain", Text: name}}}, nil
				}),
			s.AddPrompt(vigil.Prompt{Name: name, Description: "Says its name."},
				func(context.Context, *vigil.GetPromptRequest) (*vigil.GetPromptResult, error) {
					return &vigil.GetPromptResult{Messages: []*vigil.PromptMessage{{Role: vigil.RoleUser, Content: &vigil.TextContent{Text: name}}}}, nil
				}),
		)
	}
	return s, errors.Join(errs...)
}

// servePagedStdio is the paged server on the process's stdin and stdout.
func servePagedStdio() error {
	s, err := pagedServer()
	if err != nil {
		return err
	}
	return s.Serve(context.Background(), stdio.Std())
}

// startPagedHTTP serves the paged server over Streamable HTTP and returns
// its URL.
func startPagedHTTP(t *testing.T) string {
	t.Helper()
	s, err := pagedServer()
	require.NoError(t, err)
	endpoint := streamable.New(s)
	ts := httptest.NewServer(endpoint)
	t.Cleanup(func() {
		_ = endpoint.Close()
		ts.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	return ts.URL
}

// pagedStdioCommand is the command of the paged server over stdio.
func pagedStdioCommand(t *testing.T) *exec.Cmd {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), childEnv+"="+childPaged)
	return cmd
}

var pagedNames = []string{"item0", "item1", "item2", "item3", "item4"}

// TestPaginationGoSDK: go-sdk's iterators follow nextCursor through every
// page of tools, resources, templates and prompts, in both eras, over HTTP
// and stdio.
func TestPaginationGoSDK(t *testing.T) {
	t.Parallel() // its own server: see doc.go
	url := startPagedHTTP(t)
	for _, era := range eras {
		for _, tr := range []string{"http", "stdio"} {
			t.Run(tr+"-"+era, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
				defer cancel()
				var transport mcp.Transport = &mcp.StreamableClientTransport{Endpoint: url}
				if tr == "stdio" {
					transport = &mcp.CommandTransport{Command: pagedStdioCommand(t)}
				}
				cs, err := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-paged", Version: "1"}, nil).Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: era})
				require.NoError(t, err)
				defer func() { assert.NoError(t, cs.Close()) }()
				first, err := cs.ListTools(ctx, nil)
				require.NoError(t, err)
				assert.Len(t, first.Tools, 2, "one page")
				assert.NotEmpty(t, first.NextCursor)
				var tools, resources, templates, prompts []string
				for x, err := range cs.Tools(ctx, nil) {
					require.NoError(t, err)
					tools = append(tools, x.Name)
				}
				for x, err := range cs.Resources(ctx, nil) {
					require.NoError(t, err)
					resources = append(resources, x.Name)
				}
				for x, err := range cs.ResourceTemplates(ctx, nil) {
					require.NoError(t, err)
					templates = append(templates, x.Name)
				}
				for x, err := range cs.Prompts(ctx, nil) {
					require.NoError(t, err)
					prompts = append(prompts, x.Name)
				}
				for _, got := range [][]string{tools, resources, templates, prompts} {
					slices.Sort(got)
					assert.Equal(t, pagedNames, got)
				}
			})
		}
	}
}

// TestPaginationMCPGo: mcp-go's List* methods read every page, and
// ListToolsByPage one page, in both eras, over HTTP and stdio.
func TestPaginationMCPGo(t *testing.T) {
	t.Parallel() // its own server: see doc.go
	url := startPagedHTTP(t)
	for _, era := range eras {
		for _, tr := range []string{"http", "stdio"} {
			t.Run(tr+"-"+era, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
				defer cancel()
				var tp transport.Interface
				if tr == "stdio" {
					self, err := os.Executable()
					require.NoError(t, err)
					tp = transport.NewStdio(self, append(os.Environ(), childEnv+"="+childPaged))
				} else {
					var err error
					tp, err = transport.NewStreamableHTTP(url)
					require.NoError(t, err)
				}
				c := mcpclient.NewClient(tp)
				require.NoError(t, c.Start(ctx))
				defer func() { assert.NoError(t, c.Close()) }()
				mcpGoInitialize(ctx, t, c, era)
				page, err := c.ListToolsByPage(ctx, mcpgo.ListToolsRequest{})
				require.NoError(t, err)
				assert.Len(t, page.Tools, 2, "one page")
				tools, err := c.ListTools(ctx, mcpgo.ListToolsRequest{})
				require.NoError(t, err)
				resources, err := c.ListResources(ctx, mcpgo.ListResourcesRequest{})
				require.NoError(t, err)
				templates, err := c.ListResourceTemplates(ctx, mcpgo.ListResourceTemplatesRequest{})
				require.NoError(t, err)
				prompts, err := c.ListPrompts(ctx, mcpgo.ListPromptsRequest{})
				require.NoError(t, err)
				var got [4][]string
				for _, x := range tools.Tools {
					got[0] = append(got[0], x.Name)
				}
				for _, x := range resources.Resources {
					got[1] = append(got[1], x.Name)
				}
				for _, x := range templates.ResourceTemplates {
					got[2] = append(got[2], x.Name)
				}
				for _, x := range prompts.Prompts {
					got[3] = append(got[3], x.Name)
				}
				for _, names := range got {
					slices.Sort(names)
					assert.Equal(t, pagedNames, names)
				}
			})
		}
	}
}

// TestPaginationNPM: the AI SDK (listTools page by page, tools() with every
// page) and LangChain (getTools; listResources and listResourceTemplates
// read the first page only: known client bug langchainFirstPageOnly) over
// HTTP: see testdata/npm/paged.mjs.
func TestPaginationNPM(t *testing.T) {
	t.Parallel() // its own server: see doc.go
	node := requireNPM(t)
	url := startPagedHTTP(t)
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			runNode(t, node, time.Minute, "paged.mjs", url, era)
		})
	}
}
