package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/vigil-mcp/vigil/gateway/internal/openapi"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/memory"
)

// A restAPI is an OpenAPI upstream (Upstream.OpenAPI) as an MCP server of
// the gateway's own, in process: a tool per operation, whose handler
// calls the REST API (gateway/internal/openapi). The mount reaches it as
// it would any upstream, through a session over an in-memory pipe, so
// that the catalog, pinning, policy, metrics and the rest apply as they
// do to an MCP upstream.
type restAPI struct {
	api     *openapi.API
	digest  string                   // "sha256:" and the hex SHA-256 of the description's bytes, which the catalog lock pins (pinning.go)
	ops     map[string]*openapi.Tool // by tool name: what the catalog selects by (restpick.go)
	srv     *server.Server
	serving sync.WaitGroup // a goroutine per session, serving it
	// refused is Upstream.Refused: asked on a 401 to a caller's call.
	refused func(ctx context.Context, again bool) error
	// calls holds the caller's context of each call in flight, by the id
	// its request carries in _meta (restcall.go).
	calls  sync.Map // uint64 -> context.Context
	nextID atomic.Uint64
}

// loadOpenAPI loads up's description, at up.URL when set (else at the
// description's first server), for Mount's checks and for newRESTAPI.
func loadOpenAPI(up Upstream) (*openapi.API, error) {
	api, err := openapi.Load(up.OpenAPI, up.URL)
	if err != nil {
		return nil, fmt.Errorf("gateway: upstream %s: %w", up.Name, err)
	}
	return api, nil
}

// newRESTAPI serves api's operations as tools, calling them through
// client with up.Header, and up.Credentials' headers, added to each
// request (restTransport: restcall.go); a 401 to a call goes to
// up.Refused (callREST).
func newRESTAPI(api *openapi.API, up Upstream, client *http.Client, logger *slog.Logger) *restAPI {
	sum := sha256.Sum256(up.OpenAPI)
	r := &restAPI{api: api, ops: map[string]*openapi.Tool{}, srv: server.New(server.WithLogger(logger)), refused: up.Refused, digest: "sha256:" + hex.EncodeToString(sum[:])}
	sayUnmetSecurity(api, up, logger) // restsecurity.go
	c := *client
	c.Transport = restTransport{base: client.Transport, header: up.Header, credentials: up.Credentials}
	for _, t := range api.Tools() {
		// This server checks the arguments against the tool's input schema,
		// as an MCP upstream would: the gateway leaves that to upstreams.
		tool := server.Tool{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: t.InputSchema, OutputSchema: t.OutputSchema}
		if t.ReadOnly || t.Idempotent {
			tool.Annotations = &server.ToolAnnotations{}
			if t.ReadOnly {
				tool.Annotations.ReadOnlyHint = new(true)
			}
			if t.Idempotent {
				tool.Annotations.IdempotentHint = new(true)
			}
		}
		name := t.Name
		r.ops[name] = &t
		err := r.srv.AddTool(tool, func(ctx context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
			ctx, done := r.callerOf(ctx, req) // restcall.go
			defer done()
			res, err := r.callREST(withOperation(ctx, &t), &c, name, req.Arguments)
			if errors.Is(err, openapi.ErrArguments) {
				// A tool error, as the server answers arguments its schema
				// refuses (MCP 2025-11-25): the model can correct them.
				out := server.Text(fmt.Sprintf("invalid arguments for tool %q: %v", name, err))
				out.IsError = true
				return out, nil
			}
			if err != nil {
				return nil, err
			}
			out := server.Text(res.Text)
			out.IsError = res.IsError
			if res.Structured != nil {
				out.StructuredContent = res.Structured
			}
			return out, nil
		})
		if err != nil { // a name or schema Load vouches for: not expected
			logger.Warn("gateway: an operation of the OpenAPI description not served", "tool", name, "err", err)
		}
	}
	return r
}

// callREST calls the operation name with args; when the API answers 401
// and the upstream has Refused (the caller's credentials refused),
// Refused renews them, or answers with its error (asking the user to
// connect the account again), and the call is sent once more, twice at
// most, as an MCP upstream's 401 is followed (relay.go). A 401 means the
// API did nothing: any call may be sent again.
func (r *restAPI) callREST(ctx context.Context, c *http.Client, name string, args json.RawMessage) (openapi.Result, error) {
	res, err := r.api.Call(ctx, c, name, args)
	if r.refused == nil {
		return res, err
	}
	for _, again := range []bool{false, true} {
		if err != nil || res.Status != http.StatusUnauthorized || ctx.Err() != nil {
			break
		}
		if rerr := r.refused(ctx, again); rerr != nil {
			return openapi.Result{}, rerr
		}
		res, err = r.api.Call(ctx, c, name, args)
	}
	return res, err
}

// restClient is the HTTP client of an OpenAPI upstream's calls: the
// standard transport, redirects as openapi.API.Call follows them.
func restClient() *http.Client {
	return &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
}

// descriptionDigest returns the digest of r's description, "" when r is
// nil (not an OpenAPI upstream).
func (r *restAPI) descriptionDigest() string {
	if r == nil {
		return ""
	}
	return r.digest
}

// operation returns the operation served as the tool name; nil when r
// is nil (not an OpenAPI upstream) or serves no such tool.
func (r *restAPI) operation(name string) *openapi.Tool {
	if r == nil {
		return nil
	}
	return r.ops[name]
}

// dial opens a session with the API's server.
func (r *restAPI) dial() transport.Conn {
	a, b := memory.NewPair()
	r.serving.Go(func() { _ = r.srv.Serve(context.Background(), b) })
	return a
}

// close ends the API's sessions, waiting for them.
func (r *restAPI) close() {
	_ = r.srv.Close()
	r.serving.Wait()
}
