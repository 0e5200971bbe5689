package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vigil-mcp/vigil/cmd/internal/flagvalue"
	"github.com/vigil-mcp/vigil/cmd/internal/upstreamspec"
	"github.com/vigil-mcp/vigil/gateway"
	"github.com/vigil-mcp/vigil/transport/stdio"
)

// upstreamWaitHTTP is how long vigil waits for its upstreams before it
// serves HTTP: those ready by then are served from the first request,
// the others once they are (clients hear list_changed).
const upstreamWaitHTTP = time.Second

// upstreamWait is how long vigil waits, before serving, for its
// upstreams' first starts: upstreamWaitHTTP over HTTP, where /healthz and
// /readyz must answer from the start; with -stdio, until each is ready or
// has failed once (bounded by -upstream-start-timeout): the client that
// started vigil initializes and lists at once, and not every client
// lists again on list_changed.
func upstreamWait(cfg config) time.Duration {
	if cfg.stdio {
		return cfg.upstreamStartTimeout + time.Second
	}
	return upstreamWaitHTTP
}

// drainGrace is how long in-flight requests may run after SIGTERM: the
// whole -shutdown-grace without upstreams, else what the upstreams'
// stop leaves of it.
func drainGrace(cfg config) time.Duration {
	if len(cfg.upstreams) == 0 {
		return cfg.grace
	}
	return max(cfg.grace-upstreamspec.StopBudget(cfg.grace), 0)
}

// knownToolNames returns names (the tools served, sorted) and the tools
// the flags name (-tool-rate-limits, -auth-policy, -auth-tool-scopes) that
// an upstream not ready yet may serve (upstreamspec.KnownToolNames).
func knownToolNames(cfg config, names []string, sts []gateway.UpstreamStatus, logger *slog.Logger) []string {
	var named []string
	for tool := range cfg.toolRateLimits {
		named = append(named, tool)
	}
	if cfg.authPolicy != nil {
		for tool := range cfg.authPolicy.Tools {
			named = append(named, tool)
		}
	}
	for tool := range cfg.authToolScopes {
		named = append(named, tool)
	}
	return upstreamspec.KnownToolNames(names, named, sts, logger)
}

// upstreamConfig returns the gateway's configuration of cfg.
func upstreamConfig(cfg config, logger *slog.Logger) gateway.Config {
	idle := cfg.upstreamIdle
	if idle == 0 {
		idle = -1 // never, for the gateway
	}
	gc := gateway.Config{
		Upstreams: cfg.upstreams, Logger: logger, MaxProcesses: cfg.upstreamMaxProcesses, IdleTimeout: idle, DropUncheckedTools: cfg.upstreamDropUnchecked,
		Search:   cfg.catalogFlags.Search,
		Required: cfg.upstreamRequired, Catalog: cfg.catalog, SandboxDir: cfg.upstreamSandboxDir, StartTimeout: cfg.upstreamStartTimeout, StopGrace: upstreamspec.StopBudget(cfg.grace) * 4 / 5,
	}
	if !cfg.stdio { // with -stdio, its one client is the only caller
		gc.ProcessShare, gc.Caller = cfg.quotaProcessShare, callerOf
	}
	return gc
}

// gatewayFlags are the gateway's (-upstream*): the MCP servers vigil
// fronts instead of the demo tools, what each gets (environment, headers,
// token), which of their tools are served, their bounds, and how their
// sessions start, live and end.
type gatewayFlags struct {
	targets, env, headers, auths, tools []string // -upstream, -upstream-env, -upstream-header, -upstream-auth, -upstream-tools
	maxMessage, maxCatalog              []string // -upstream-max-message, -upstream-max-catalog
	sandboxes                           []string // -upstream-sandbox
	shared                              bool     // -upstream-shared
	required                            string   // -upstream-required
}

func (g *gatewayFlags) register(fs *flag.FlagSet, cfg *config) {
	cfg.upstreamMaxMessage, cfg.upstreamMaxCatalog = stdio.DefaultMaxFrameSize, 16<<20
	fs.Func("upstream", "serve the tools of the MCP server `NAME=TARGET` instead of the demo tools: TARGET is an http:// or https:// Streamable HTTP endpoint, openapi:FILE for a REST API whose OpenAPI 3.0 or 3.1 description FILE holds (each operation a tool, called at its first server), or a command line run as a stdio server (split as a shell splits words, no shell); repeatable, several serve their tools as NAME_tool (see docs/gateway.md)", repeated(&g.targets))
	fs.Func("upstream-env", "give the stdio upstream NAME the environment variable `NAME=K=V` (it inherits only PATH, HOME, LANG and TMPDIR); repeatable", repeated(&g.env))
	fs.Func("upstream-header", "send the HTTP upstream NAME the header `NAME=Header-Name=VALUE` with every request, its own credential (the client's token is never sent upstream); VALUE @FILE reads a file, env:VAR a variable (use one of them for a secret); repeatable", repeated(&g.headers))
	fs.Func("upstream-auth", "get the HTTP (or OpenAPI) upstream NAME its own token, `NAME=MODE,key=value,...`: client_credentials,token_url=URL,client_id=ID,client_secret=@FILE|env:VAR[,scopes=A B][,resource=URI], or token_exchange,audience=URI[,scopes=A B] to exchange each caller's token with -auth-exchange-* (what no caller sends gets that client's own token by client credentials), or user,client_id=ID,client_secret=@FILE|env:VAR[,issuer=URL][,scopes=A B][,resource=URI] for each caller's own token, which the user authorizes once in a browser (-connect-*; the authorization server found from the upstream's 401 unless issuer= names it, as an OpenAPI upstream's must); one per upstream (see docs/gateway.md, docs/security.md)", repeated(&g.auths))
	fs.Func("upstream-tools", "serve only the tools of upstream NAME that `NAME=PATTERN[,PATTERN]` lets through: path.Match globs of its own tool names, !glob to leave tools out; a pattern that matches none of its tools fails the start; repeatable", repeated(&g.tools))
	fs.Func("upstream-sandbox", "confine the stdio upstream NAME's processes by the profile `NAME=PROFILE[,KEY=VALUE...]`: PROFILE none (the default for every stdio upstream: the system's files and its command's read-only, a private directory, no network), network (none, plus any public host through the egress proxy) or off (unconfined: it reaches all the gateway's user can); keys read=PATH and write=PATH grant paths, net=HOST:PORT a host through the proxy (HOST or PORT may be *; net=all is the gateway's own network), memory=BYTES, processes=N and files=N bound it (see docs/security.md); one per upstream", repeated(&g.sandboxes))
	fs.StringVar(&cfg.upstreamSandboxDir, "upstream-sandbox-dir", "", "where each sandboxed stdio upstream's private directory (its HOME and TMPDIR, kept across starts) is made, as DIR/NAME (default vigil-sandbox-UID in the system's temporary directory)")
	fs.BoolVar(&g.shared, "upstream-shared", false, "serve every client session on one session of each upstream (one process for stdio), instead of a session (a process) per client session; its request ids are its own, so clients' ids never clash")
	fs.IntVar(&cfg.upstreamMaxProcesses, "upstream-max-processes", 32, "most processes of each stdio upstream, one per client session; the call of one session more is answered -32000 until one ends, unless -quota-process-share ends another caller's idle one for it (the spare spawned ahead for the next session and the processes tool views are listed on are counted, the process each upstream keeps for listing is not)")
	fs.Func("upstream-unchecked-tools", "what to do with an upstream's tool whose input schema the gateway cannot compile (an unsupported dialect, a cycle that validation would never leave): `serve` it with its arguments left for the upstream to validate (the default), or `drop` it", upstreamspec.UncheckedTools(&cfg.upstreamDropUnchecked))
	fs.StringVar(&g.required, "upstream-required", "", "the upstreams /readyz requires to be ready, `NAME[,NAME]` (default every one); the others are served when they are, and /readyz still names their state")
	fs.DurationVar(&cfg.upstreamStartTimeout, "upstream-start-timeout", 2*time.Minute, "bound each start of an upstream (its process's spawn, initialize, the first listing), logged every 10 s while under way; the default leaves room for npx -y fetching its package on a first run; one that takes longer has failed, and the upstream is started again after a backoff (1 s, doubling up to 30 s)")
	fs.Func("upstream-max-message", "bound each message an upstream sends (a stdio line, an HTTP body or SSE event), `[NAME=]BYTES`: every upstream's, or NAME's; a longer one fails the call it answers, the upstream living on (default 4194304; a result that large also needs -max-result-bytes); repeatable", repeated(&g.maxMessage))
	fs.Func("upstream-max-catalog", "bound the bytes of an upstream's tools, prompts, resources and templates the gateway holds, `[NAME=]BYTES`: every upstream's, or NAME's; a listing over it fails (default 16777216); repeatable", repeated(&g.maxCatalog))
	cfg.catalogFlags.Register(fs)
	cfg.connect.Register(fs)
	fs.DurationVar(&cfg.upstreamIdle, "upstream-idle", 5*time.Minute, "end a client session's upstream session (its stdio process) after this long without a call, give or take half of it; its next call starts a new one (0: never)")
}

func (g *gatewayFlags) resolve(cfg *config, src flagSource) error {
	var err error
	if cfg.upstreams, err = upstreamspec.Parse(g.targets, g.env); err != nil {
		return err
	}
	if err := upstreamspec.ApplySandbox(cfg.upstreams, g.sandboxes); err != nil {
		return err
	}
	if err := upstreamspec.ApplyTools(cfg.upstreams, g.tools); err != nil {
		return err
	}
	if err := upstreamspec.ApplyBytes(cfg.upstreams, "-upstream-max-message", g.maxMessage, &cfg.upstreamMaxMessage, func(up *gateway.Upstream, n int64) {
		up.MaxMessageBytes = int(n)
	}); err != nil {
		return err
	}
	if err := upstreamspec.ApplyBytes(cfg.upstreams, "-upstream-max-catalog", g.maxCatalog, &cfg.upstreamMaxCatalog, func(up *gateway.Upstream, n int64) {
		up.MaxCatalogBytes = n
	}); err != nil {
		return err
	}
	if cfg.upstreamAuth, err = upstreamspec.ParseCredentials(cfg.upstreams, g.headers, g.auths, src.getenv); err != nil {
		return err
	}
	for name, ua := range cfg.upstreamAuth {
		if ua.Mode == upstreamspec.TokenExchange && cfg.exchangeEndpoint == "" {
			return fmt.Errorf("-upstream-auth %s: token_exchange needs -auth-exchange-endpoint", name)
		}
	}
	if err := cfg.connect.Resolve(src.getenv, upstreamspec.Users(cfg.upstreamAuth), cfg.authIssuer); err != nil {
		return err
	}
	for i := range cfg.upstreams {
		cfg.upstreams[i].Shared = g.shared
	}
	if err := upstreamspec.CheckSessions(func(name string) bool { return src.given[name] }, len(cfg.upstreams), cfg.upstreamMaxProcesses, cfg.upstreamIdle, cfg.upstreamStartTimeout); err != nil {
		return err
	}
	if cfg.upstreamRequired, err = upstreamspec.Required(cfg.upstreams, g.required); err == nil {
		err = cfg.catalogFlags.Check()
	}
	if err == nil {
		cfg.catalog, err = cfg.catalogFlags.Load()
	}
	return err
}

// mountUpstreams mounts the upstreams' tools (-upstream) on f.svc, in
// place of the demo tools, before serving, and checks the tools the flags
// name as the demo tools are; closeGateway ends the upstreams.
func (f *front) mountUpstreams(ctx context.Context, registry prometheus.Registerer, logger *slog.Logger) (closeGateway func(), err error) {
	cfg, srv := f.cfg, f.svc.Server
	if len(cfg.upstreams) == 0 {
		return func() {}, nil
	}
	f.creds = &upstreamspec.Credentials{}
	if f.users, err = f.creds.StartUsers(ctx, cfg.upstreams, cfg.upstreamAuth, cfg.connect.Config(cfg.authIssuer, cfg.shared, registry, logger)); err != nil {
		return nil, err
	}
	gcfg := upstreamConfig(cfg, logger)
	xc := upstreamspec.ExchangeClient{Endpoint: cfg.exchangeEndpoint, ID: cfg.exchangeClientID, Secret: cfg.exchangeSecret}
	gcfg.AuditLog = f.audit // pin changes (-catalog-lock)
	gcfg.Upstreams, gcfg.Registerer, gcfg.ToolScopes = f.creds.Apply(cfg.upstreams, cfg.upstreamAuth, xc), registry, demoToolScopes(cfg)
	mctx, cancel := context.WithTimeout(ctx, upstreamWait(cfg))
	g, err := gateway.Mount(mctx, srv, gcfg)
	cancel()
	if err != nil {
		return nil, err
	}
	f.gateway.Store(g)
	names := knownToolNames(cfg, srv.ToolNames(), g.Upstreams(), logger)
	if err = checkToolNames(cfg, names); err == nil {
		err = flagvalue.KnownTools("-auth-tool-scopes", names, maps.Keys(cfg.authToolScopes))
	}
	if err == nil && f.users != nil {
		err = f.users.AddTools(srv) // gateway_connections, gateway_disconnect
	}
	if err != nil {
		_ = g.Close()
		return nil, err
	}
	if cfg.catalogFlags.Write { // approve: the lock of what is served now, then exit
		defer func() { _ = g.Close() }()
		wctx, cancel := context.WithTimeout(ctx, cfg.upstreamStartTimeout)
		defer cancel()
		return nil, cfg.catalogFlags.WriteLock(wctx, g)
	}
	stopHUP := cfg.catalogFlags.ReloadOnHUP(ctx, g, logger) // nothing without -catalog
	return func() { stopHUP(); _ = g.Close() }, nil
}

// repeated returns a flag.Func that adds each value of a repeatable flag
// to *dst.
func repeated(dst *[]string) func(string) error {
	return func(v string) error {
		*dst = append(*dst, v)
		return nil
	}
}
