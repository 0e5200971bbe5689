package main

import (
	"cmp"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/vigil-mcp/vigil"
	"github.com/vigil-mcp/vigil/cmd/internal/catalogfile"
	"github.com/vigil-mcp/vigil/cmd/internal/connect"
	"github.com/vigil-mcp/vigil/cmd/internal/exposure"
	"github.com/vigil-mcp/vigil/cmd/internal/servercard"
	"github.com/vigil-mcp/vigil/cmd/internal/upstreamspec"
	"github.com/vigil-mcp/vigil/cmd/internal/upstreamview"
	"github.com/vigil-mcp/vigil/gateway"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// front is what vigil puts in front of the MCP endpoint and its HTTP
// servers (vigil.WithFront, vigil.WithHTTPTimeouts, vigil.WithConnContext): with -auth-issuer the
// OAuth guard, with -rate-limit the rate limiter, and vigil's connection
// hygiene (httpHygiene). svc is set once vigil.New has returned, before
// the service serves.
type front struct {
	cfg     config
	svc     *vigil.Service
	authz   *authorization                  // built by mcpFront, once the MCP listener's address is known
	gateway atomic.Pointer[gateway.Gateway] // the upstreams mounted (-upstream), once they are
	creds   *upstreamspec.Credentials       // the -upstream-auth credentials, set before mounting; nil without upstreams
	users   *connect.Connector              // the user-mode upstreams' flows (-upstream-auth NAME=user); nil without
	audit   io.Writer                       // the audit log (-audit-log), which the gateway's pin changes go to too; nil: none
	log     *slog.Logger
}

// options returns the service's options of front, and the rest of what
// the flags select for serving HTTP.
func (f *front) options() []vigil.Option {
	opts := append(httpHygiene(f.cfg),
		vigil.WithFront(f.mcpFront),
		// checkExposure has refused what is not safe to serve, more
		// strictly than vigil does.
		vigil.WithAllowPublic(),
	)
	if f.cfg.shared != nil || len(f.cfg.upstreams) > 0 {
		opts = append(opts, vigil.WithReadiness(f.ready))
	}
	if upstreamspec.Users(f.cfg.upstreamAuth) > 0 { // a user's connections, listed and revoked
		opts = append(opts, vigil.WithAdminHandler("/admin/", connect.AdminHandler(func() *connect.Connector { return f.users }, f.log)))
		if w := adminAccountsWarning(f.cfg); w != "" {
			f.log.Warn(w, "addr", f.cfg.adminAddr)
		}
	}
	if f.cfg.shared != nil || len(f.cfg.upstreams) > 0 {
		opts = append(opts, vigil.WithReadinessDetail(f.readyDetail))
	}
	if f.cfg.shared == nil && slices.ContainsFunc(f.cfg.upstreams, func(u gateway.Upstream) bool { return u.URL != "" }) {
		// A gateway in front of an HTTP upstream keeps its streams' events
		// (bounded: 64 MiB, 4 MiB a session) so that a caller resumes a
		// stream with Last-Event-ID, as an upstream that wants to be
		// polled makes it do (with -redis, Redis keeps them).
		opts = append(opts, vigil.WithEndpointOptions(streamable.WithEventStore(streamable.NewMemoryEventStore(0, 0))))
	}
	return opts
}

// adminAccountsWarning is exposure.AdminAccounts of cfg.
func adminAccountsWarning(cfg config) string {
	return exposure.AdminAccounts(cfg.adminAddr, upstreamspec.Users(cfg.upstreamAuth))
}

// ready is the readiness check of /readyz beyond serving: Redis answers
// (-redis), and every upstream -upstream-required names (every one by
// default) is ready (-upstream); its text then names each upstream's
// state, one a line.
func (f *front) ready() error {
	if shared := f.cfg.shared; shared != nil && !shared.Ready() {
		return errSharedStoreUnreachable
	}
	if g := f.gateway.Load(); g != nil {
		return g.Health()
	}
	return nil
}

// readyDetail is what /readyz's 200 answer says after "ready": with
// -redis, that the shared session store is away and what that refuses,
// while it is (the replica stays ready through an outage by default);
// with -upstream, each upstream's state.
func (f *front) readyDetail() string {
	var detail string
	if shared := f.cfg.shared; shared != nil {
		detail = shared.ReadinessDetail()
	}
	return detail + f.upstreamStates()
}

// upstreamStates is each upstream's state, one a line, for /readyz's 200
// answer (its 503 answer names them through Health).
func (f *front) upstreamStates() string {
	return upstreamview.States(upstreamview.Of(f.gateway.Load()))
}

// upstreamLines is each upstream's view for the live page; none before
// the upstreams are mounted.
func (f *front) upstreamLines() []string {
	return upstreamview.Lines(upstreamview.Of(f.gateway.Load()))
}

// errSharedStoreUnreachable is what /readyz says while Redis does not
// answer (-redis).
var errSharedStoreUnreachable = errors.New("shared session store unreachable")

// mcpFront is the vigil.Front of the MCP endpoint.
func (f *front) mcpFront(ctx context.Context, addr net.Addr, srv streamable.Server, opts ...streamable.Option) (*streamable.Endpoint, http.Handler, map[string]http.Handler, error) {
	var endpoint *streamable.Endpoint
	var mcp http.Handler
	var public map[string]http.Handler
	if f.cfg.authEnabled() {
		var endpointScopes []string // the catalog's at start: the metadata is built once
		if g := f.gateway.Load(); g != nil && f.cfg.catalogFlags.File != "" {
			endpointScopes = g.AllEndpointScopes()
		}
		authz, err := newAuthorization(ctx, f.cfg, resourceURI(f.cfg, addr), f.svc.Server, f.endpointScopes, endpointScopes, f.svc.Registry, f.svc.Logger)
		if err != nil {
			return nil, nil, nil, err
		}
		f.authz = authz
		f.creds.UseExchanger(authz.x)
		// The guarded endpoint checks tool scopes per message, and a
		// forwarded task request is authorized there too.
		endpoint, mcp = authz.rs.Endpoint(srv, opts...)
		public = authz.public()
		if f.users != nil { // -upstream-auth NAME=user: its pages, under the gateway's own URL
			f.users.SetBase(strings.TrimSuffix(resourceURI(f.cfg, addr), "/mcp"))
			public["/connect/"] = f.users.Handler()
		}
	} else {
		endpoint = streamable.New(srv, opts...)
		mcp = endpoint
	}
	if len(rateLimitOptions(f.cfg)) > 0 {
		// The principal's rate, behind the guard that names it (a
		// forwarded request was counted on the replica it reached first).
		// The guard in front of the endpoint itself (above) stays the one
		// that checks tool scopes per message.
		mcp = f.guarded(endpoint)
	}
	var endpoints func() ([]string, bool)
	if g := f.gateway.Load(); g != nil && f.cfg.catalogFlags.File != "" { // the catalog's endpoints, /mcp/NAME, and its default one, /mcp
		mcp = f.guarded(g.Endpoints(endpoint))
		public = catalogfile.WithEndpoints(public, mcp)
		endpoints = g.EndpointNames
	}
	if d := &f.cfg.discovery; d.Enabled { // the Server Cards, and the catalog of them
		s, url := d.Vigil(buildVersion()), cmp.Or(d.PublicURL, resourceURI(f.cfg, addr))
		if f.authz != nil {
			s.ResourceMetadata = f.authz.rs.MetadataURL()
		}
		public = servercard.Routes(public, s, url, endpoints)
	}
	return endpoint, mcp, public, nil
}

// endpointScopes are the scopes a request to a -catalog endpoint,
// /mcp/NAME or the default one, /mcp, needs (the guard's
// oauth.Config.RequestScopes); none for another path.
func (f *front) endpointScopes(r *http.Request) []string {
	if g := f.gateway.Load(); g != nil && f.cfg.catalogFlags.File != "" && (r.URL.Path == "/mcp" || strings.HasPrefix(r.URL.Path, catalogfile.EndpointsPath)) {
		return g.EndpointScopes(r)
	}
	return nil
}

// guarded is h behind the principal's rate limit, when there is one, and
// the guard that names the principal, when there is one.
func (f *front) guarded(h http.Handler) http.Handler {
	if len(rateLimitOptions(f.cfg)) > 0 {
		h = f.svc.Instrumentation.RateLimitHandler(h)
	}
	if f.authz != nil {
		h = f.authz.rs.Handler(h)
	}
	return h
}

// close releases the guard's verifier.
func (f *front) close() {
	if f.authz != nil {
		f.authz.close()
	}
}

// resourceURI returns the canonical resource URI of the MCP endpoint:
// -auth-resource, or http://HOST:PORT/mcp with the host of -http as given
// (checkExposure refused a wildcard one) and the port listened on.
func resourceURI(cfg config, addr net.Addr) string {
	if cfg.authResource != "" {
		return cfg.authResource
	}
	host, _, err := net.SplitHostPort(cfg.httpAddr)
	_, port, perr := net.SplitHostPort(addr.String())
	if err != nil || perr != nil || host == "" {
		return "http://" + addr.String() + "/mcp"
	}
	return "http://" + net.JoinHostPort(host, port) + "/mcp"
}

// httpHygiene returns the options of vigil's connection hygiene beyond
// the service's own: a request body within cfg.bodyReadTimeout of the
// request's start and keep-alive connections closed after
// cfg.httpIdleTimeout of idleness (0: no limit, for both) and the client's address for the quotas
// (vigil's own ConnContext, streamable.ConnContext, gives each connection the memo of the last
// token verified on it).
func httpHygiene(cfg config) []vigil.Option {
	body, idle := cfg.bodyReadTimeout, cfg.httpIdleTimeout
	if body == 0 {
		body = -1 // no limit
	}
	if idle == 0 {
		idle = -1
	}
	return []vigil.Option{
		vigil.WithHTTPTimeouts(body, idle),
		vigil.WithConnContext(clientConnContext(cfg.quotaIPv6Prefix)),
	}
}

// checkExposure refuses to serve /mcp where it would be open to more than
// the flags say (package exposure), naming every flag missing, with an
// example that completes args, the command line; it returns a warning to
// log when serving unauthenticated off loopback. -stdio has no listener.
func checkExposure(cfg config, args []string) (warning string, err error) {
	if cfg.stdio {
		return "", nil
	}
	host, _ := os.Hostname() // for the example's -allowed-hosts; "" for a placeholder
	return exposure.Check(exposure.Listener{
		HTTPAddr: cfg.httpAddr, AdminAddr: cfg.adminAddr, Authorized: cfg.authEnabled(), Resource: cfg.authResource,
		AllowUnauthenticated: cfg.allowUnauthenticated, AllowedHosts: cfg.allowedHosts,
		Args: args, ExampleHost: host,
	})
}
