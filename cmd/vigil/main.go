package main

import (
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/url"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/vigil-mcp/vigil"
	"github.com/vigil-mcp/vigil/cmd/internal/flagvalue"
	"github.com/vigil-mcp/vigil/cmd/internal/upstreamspec"
	"github.com/vigil-mcp/vigil/debugpage"
	"github.com/vigil-mcp/vigil/gateway"
	"github.com/vigil-mcp/vigil/internal/asyncwriter"
	"github.com/vigil-mcp/vigil/internal/gcheadroom"
	"github.com/vigil-mcp/vigil/internal/invisible"
	"github.com/vigil-mcp/vigil/internal/loopback"
	"github.com/vigil-mcp/vigil/internal/metrics"
	"github.com/vigil-mcp/vigil/internal/otelsetup"
	"github.com/vigil-mcp/vigil/internal/redisstore"
	"github.com/vigil-mcp/vigil/internal/slogtext"
	"github.com/vigil-mcp/vigil/middleware/oauth"
	"github.com/vigil-mcp/vigil/middleware/policy"
	"github.com/vigil-mcp/vigil/redisshare"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/stdio"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	// vigil serves no heap profile, so the runtime's sampling of
	// allocations (a stack walk every 512 KiB allocated; see
	// docs/perf/ROUNDS.md) would be work for no reader; it must be
	// set before the program allocates much.
	runtime.MemProfileRate = 0
	if err := run(context.Background(), os.Args[1:], os.Getenv, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "vigil:", err)
		os.Exit(1)
	}
}

// config is what flags and the environment select.
type config struct {
	httpAddr         string
	stdio            bool
	grace            time.Duration
	logLevel         slog.Level
	logFormat        string
	maxFrame         int
	maxBody          int64
	maxSessions      int
	listChangedDelay time.Duration
	maxInFlight      int
	idleTimeout      time.Duration
	allowedHosts     []string
	requestTimeout   time.Duration
	toolConcurrency  int
	maxResultBytes   int // -max-result-bytes: a larger result is refused, a tool's as a tool error (0: no limit)
	traceRing        int
	debug            bool
	gcHeadroomMiB    int    // -gc-headroom: the least heap goal, live heap included (0: GOGC alone)
	stateKey         []byte // from VIGIL_REQUEST_STATE_KEY only: a secret is no flag
	clusterKey       []byte // from VIGIL_CLUSTER_KEY only: what the replicas hand to Redis is signed and sealed with it
	clusterKeyPrev   []byte // from VIGIL_CLUSTER_KEY_PREVIOUS only: still accepted during a rotation

	// HTTP connection hygiene, on the MCP and the admin listener.
	httpIdleTimeout time.Duration // keep-alive connections idle this long are closed
	bodyReadTimeout time.Duration // a request body must arrive within this

	// Authorization (OAuth 2.1 resource server).
	authIssuer            string              // JWT verification, keys found by discovery from this issuer
	authResource          string              // the canonical resource URI tokens must name; "": http://HOST:PORT/mcp
	authScopes            []string            // scopes every request needs
	authToolScopes        map[string][]string // tool name → scopes its calls need, besides authScopes
	allowUnauthenticated  bool                // serve without authorization on a non-loopback address
	introspectionClientID string              // from VIGIL_AUTH_INTROSPECTION_CLIENT_ID only
	introspectionSecret   string              // from VIGIL_AUTH_INTROSPECTION_CLIENT_SECRET only: never printed
	authCacheTTL          time.Duration       // -auth-cache-ttl: how long an introspected active token is trusted (0: not cached)
	authIntrospectRate    float64             // -auth-introspection-rate: calls per second for tokens not cached
	authInsecureHTTP      bool                // -auth-insecure-http: the authorization server over plain http on any host (tests, labs)
	authHideTools         bool                // -auth-hide-tools: a call of a tool the caller may not call is answered as one of an unknown tool
	authPolicyFile        string              // -auth-policy: the file of the tool policies; "": none
	authPolicy            *policy.Config      // its policies, read by parseConfig (policy.go)
	exchangeEndpoint      string              // -auth-exchange-endpoint: the token endpoint of RFC 8693 token exchange (downstream_whoami)
	exchangeClientID      string              // -auth-exchange-client-id
	exchangeSecret        string              // from VIGIL_AUTH_EXCHANGE_CLIENT_SECRET only: never printed
	authRequireDPoP       bool                // -auth-require-dpop: every token DPoP-bound, presented with its proof; Bearer refused
	authDPoPNonces        bool                // -auth-dpop-nonces: DPoP proofs must carry a nonce of the server's (RFC 9449 §9)

	auditBlock time.Duration // -audit-block: how long an audit line may wait for room before it is dropped (0: none)

	traceClientContext string // -trace-client-context: "trust", "link", or "" for link on an authenticated public listener
	traceContent       bool   // -trace-content: tool arguments and results, prompt variables on spans, redacted

	redisURL string             // -redis: share the 2025 sessions with the other replicas on this Redis; "": in memory
	shared   *redisshare.Shared // the shared mode, opened by run when redisURL is set (not a flag)
	// Redis's transport and credentials (redisshare.Config).
	redisCA        string // -redis-ca: PEM file of the CAs of Redis's certificate; "": the system's
	redisPlaintext bool   // -redis-insecure-plaintext: redis:// to a Redis that is not on loopback
	redisPassword  string // from VIGIL_REDIS_PASSWORD only: never printed
	// from VIGIL_REDIS_SENTINEL_PASSWORD only: the Sentinels' (redis+sentinel://)
	redisSentinelPassword string
	redisOutageUnready    bool // -redis-outage-unready: /readyz 503 whenever Redis does not answer

	// Rate limits (token buckets; shared on Redis with -redis): each
	// principal's requests, and its calls of some tools. 0: none.
	rateLimit      float64
	rateBurst      int
	toolRateLimits map[string]toolRate

	adminAddr string // -admin-http: the observability endpoints' own listener; "": on the MCP listener
	auditLog  string // -audit-log: a file, or "-" for standard output; "": none
	skillsDir string // -skills: a directory of Agent Skills to serve; "": none

	upstreamAuth map[string]upstreamspec.Auth // -upstream-auth, by upstream name: its secrets never printed
	upstreams    []gateway.Upstream           // -upstream, -upstream-env, -upstream-shared: the MCP servers fronted instead of the demo tools
	// An upstream session per downstream session (gateway.Config).
	upstreamMaxProcesses  int           // -upstream-max-processes: processes of each stdio upstream serving one session each
	upstreamIdle          time.Duration // -upstream-idle: end a session's upstream session idle for this long (0: never)
	upstreamDropUnchecked bool          // -upstream-unchecked-tools drop: leave out the tools whose input schema cannot be compiled
	upstreamRequired      []string      // -upstream-required: the upstreams /readyz requires; empty, every one
	upstreamStartTimeout  time.Duration // -upstream-start-timeout: bounds each start of an upstream (spawn, initialize, listing)
	upstreamMaxMessage    int64         // -upstream-max-message BYTES: every upstream's bound on a message (NAME=BYTES: in upstreams)
	upstreamMaxCatalog    int64         // -upstream-max-catalog BYTES: every upstream's bound on its catalog (NAME=BYTES: in upstreams)

	// Quotas per caller (quota.go): the user (issuer and subject), or the client's IP (IPv6: its network).
	quotaSessions   int           // -quota-sessions: concurrent sessions (0: none)
	quotaEvictIdle  bool          // -quota-evict-idle: over it, end the caller's idlest session instead of refusing
	quotaInFlight   int           // -quota-in-flight: requests in flight over all its sessions and stateless requests (0: none)
	quotaBytes      int64         // -quota-bytes: bytes of request bodies and unwritten answers one caller holds (0: none)
	memoryBudget    int64         // -memory-budget: bytes of request bodies and unwritten answers all callers hold (0: from GOMEMLIMIT; -1: none)
	quotaTasks      int           // -quota-tasks: tasks held (0: none)
	quotaIPv6Prefix int           // -quota-ipv6-prefix: bits of an unauthenticated IPv6 caller's network
	quotaToolShare  float64       // -quota-tool-share: fraction of each tool's slots (0 or 1: none)
	overloadTarget  time.Duration // -overload-target: queueing delay over which requests are shed (0: never)
	// Slow readers and what a session may keep (transport/streamable).
	sseWriteTimeout  time.Duration // -sse-write-timeout: bound of one SSE write
	maxResumptions   int           // -max-resumptions: GET streams one session has open at once
	initTimeout      time.Duration // -init-timeout: idle timeout of a session not yet initialized
	maxSessionState  int           // -max-session-state: bytes of a shared session's state
	maxSessionEvents int64         // -max-session-events: bytes of a shared session's stored events
}

// authEnabled reports whether requests to /mcp need a bearer token.
// (parseConfig refuses the introspection pair without -auth-issuer.)
func (c config) authEnabled() bool { return c.authIssuer != "" }

// untrustedTraceContext reports whether a client's trace context is only
// a link (-trace-client-context): by default, for authenticated clients of
// a public listener, who are not part of the operator's tracing.
func (c config) untrustedTraceContext() bool {
	if c.traceClientContext != "" {
		return c.traceClientContext == "link"
	}
	return c.authEnabled() && !c.stdio && !loopback.ListenAddr(c.httpAddr)
}

// envPrefix starts the name of every VIGIL_* variable.
const envPrefix = "VIGIL_"

// parseConfig reads the configuration from args and, for flags not given,
// from the environment through getenv (VIGIL_ and the flag's name in upper
// case, dashes as underscores; -http is VIGIL_HTTP_ADDR). An empty variable
// counts as unset. -h prints the usage to out and returns flag.ErrHelp.
func parseConfig(args []string, getenv func(string) string, out io.Writer) (config, error) {
	var cfg config
	var allowedHosts, authScopes, authToolScopes, toolRates string
	fs := flag.NewFlagSet("vigil", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&cfg.httpAddr, "http", "127.0.0.1:8080", "`address` the HTTP server listens on: MCP at /mcp, and /metrics, /healthz, /readyz, /debug/vigil unless -admin-http")
	fs.BoolVar(&cfg.stdio, "stdio", false, "serve one MCP session on standard input and output instead of HTTP")
	fs.DurationVar(&cfg.grace, "shutdown-grace", 10*time.Second, "how long shutdown may take after SIGTERM or SIGINT: in-flight requests run until they are cancelled, then stdio upstreams that have not exited are killed (they get a quarter of it, 100ms to 2s, and in-flight requests the rest)")
	fs.TextVar(&cfg.logLevel, "log-level", slog.LevelInfo, "`level` of the logs on standard error: debug, info, warn or error")
	fs.StringVar(&cfg.logFormat, "log-format", "text", "`format` of the logs on standard error: text or json")
	fs.IntVar(&cfg.maxFrame, "max-frame", stdio.DefaultMaxFrameSize, "largest stdio message accepted, in `bytes`")
	fs.Int64Var(&cfg.maxBody, "max-body", 4<<20, "largest HTTP request body accepted, in `bytes`")
	fs.IntVar(&cfg.maxSessions, "max-sessions", 10000, "most concurrent HTTP sessions (2025 protocol versions); more initializes get 503")
	fs.IntVar(&cfg.maxInFlight, "max-in-flight", 256, "most requests in flight per session; more are refused as busy")
	fs.DurationVar(&cfg.idleTimeout, "idle-timeout", 30*time.Minute, "end an HTTP session that has seen no request for this long (0: never)")
	fs.StringVar(&allowedHosts, "allowed-hosts", "", "comma-separated Host `names` accepted besides loopback names (DNS rebinding protection)")
	fs.DurationVar(&cfg.requestTimeout, "request-timeout", time.Minute, "how long one request's handler may run before it is cancelled and answered -32001 (0: no limit)")
	fs.IntVar(&cfg.toolConcurrency, "tool-concurrency", 256, "most concurrent calls of each tool, over all sessions; a call over it waits up to 1s for a slot, then is answered -32000 busy (0: no limit)")
	fs.DurationVar(&cfg.listChangedDelay, "list-changed-delay", server.DefaultListChangedDelay, "how long vigil waits after a change to its tools, resources or prompts before it sends list_changed to every session, coalescing the changes in between into one notification (0: one per change, at once)")
	fs.IntVar(&cfg.maxResultBytes, "max-result-bytes", server.DefaultMaxResultBytes, "largest encoded result of tools/call, resources/read, prompts/get or completion/complete, in `bytes`; a larger one is answered as an error saying so, a tool's as a tool error (0: no limit; a skill file is bounded by the skills' limits instead)")
	fs.IntVar(&cfg.traceRing, "trace-ring", debugpage.DefaultTraceRing, "routine traces kept in memory for /debug/vigil when OTEL_* configures no exporter, besides the slowest and the last failed, cancelled and dropped ones of each method/tool (0: keep no trace)")
	fs.IntVar(&cfg.gcHeadroomMiB, "gc-headroom", gcheadroom.DefaultHeadroomMiB, gcheadroom.FlagUsage)
	fs.BoolVar(&cfg.debug, "debug", true, "serve the /debug/vigil page (sessions, requests in flight, recent traces)")
	fs.DurationVar(&cfg.httpIdleTimeout, "http-idle-timeout", 2*time.Minute, "close a keep-alive HTTP connection idle for this long (MCP and admin listeners)")
	fs.DurationVar(&cfg.bodyReadTimeout, "body-read-timeout", 30*time.Second, "close an HTTP connection whose request body does not arrive within this (0: no limit)")
	fs.StringVar(&cfg.authIssuer, "auth-issuer", "", "authorization server `URL`: /mcp needs a bearer token from this issuer, a JWT verified with its keys (found by discovery), or introspected (VIGIL_AUTH_INTROSPECTION_*)")
	fs.StringVar(&cfg.authResource, "auth-resource", "", "canonical resource `URI` tokens must name (audience); default http://HOST:PORT/mcp of the listener, which must then not be a wildcard address")
	fs.StringVar(&authScopes, "auth-scopes", "", "comma-separated `scopes` every request to /mcp needs")
	fs.StringVar(&authToolScopes, "auth-tool-scopes", "", "per-tool scopes, besides -auth-scopes, as `tool=scope+scope,tool2=scope`; every tool named must exist")
	fs.StringVar(&cfg.authPolicyFile, "auth-policy", "", "YAML `file` of per-tool CEL policies over principal, tool, arguments and request (default: EXPR, tools: {NAME: EXPR}), checked after a call's arguments and before its tool runs; a denied call gets a JSON-RPC error naming the policy, a tool whose policy reads no arguments is hidden from a caller it denies; a bad expression fails the start; needs -auth-issuer (see docs/security.md)")
	fs.BoolVar(&cfg.allowUnauthenticated, "allow-unauthenticated", false, "serve /mcp without authorization on a non-loopback address (loopback never needs it)")
	fs.StringVar(&cfg.redisURL, "redis", "", "share the 2025-era sessions with the other replicas on Redis at this `URL`: one node (rediss://[user@]host:port/db), a primary under Sentinel (rediss+sentinel://[user@]S1:26379,S2,S3/master[/db][?sentinel_user=NAME]) or a Cluster (rediss+cluster://[user@]N1:6379,N2,N3); TLS, or redis… only on loopback: any replica then serves any session, with no session affinity; a password is refused here: give it in VIGIL_REDIS_PASSWORD (the Sentinels' in VIGIL_REDIS_SENTINEL_PASSWORD)")
	fs.BoolVar(&cfg.redisOutageUnready, "redis-outage-unready", false, "with -redis, /readyz answers 503 whenever Redis does not answer, instead of staying ready and serving what needs no Redis (stateless calls, the sessions the replica holds): every replica then leaves the load balancer at once while Redis is away (deploy/SCALING.md)")
	fs.StringVar(&cfg.redisCA, "redis-ca", "", "PEM `file` of the certificate authorities that Redis's certificate (rediss://) must chain to, instead of the system's")
	fs.BoolVar(&cfg.redisPlaintext, "redis-insecure-plaintext", false, "accept a redis:// URL (no TLS) to a Redis that is not on loopback, where anyone on the path reads the sessions and the password and can rewrite them: for tests and labs only")
	fs.StringVar(&cfg.adminAddr, "admin-http", "", "`address` of a separate listener for /metrics, /healthz, /readyz and /debug/vigil, which then leave the MCP listener")
	fs.StringVar(&cfg.skillsDir, "skills", "", "`directory` of Agent Skills to serve (the skills extension): every subdirectory holding a SKILL.md is a skill at its path (acme/billing/refunds), its files read once at start")
	fs.StringVar(&cfg.auditLog, "audit-log", "", "`file` that gets one JSON line per tools/call (who, which tool, outcome; argument names, not values), or - for standard output")
	fs.Float64Var(&cfg.rateLimit, "rate-limit", 0, "most requests (HTTP POSTs) per second of each caller (the authenticated user, whatever its client, else the client's IP address, an IPv6 one by its -quota-ipv6-prefix network), as a token bucket; more get 429 with Retry-After; with -redis, over all replicas (0: no limit)")
	fs.IntVar(&cfg.rateBurst, "rate-burst", 0, "requests a principal may send at once beyond -rate-limit's pace, the token bucket's size (0: -rate-limit rounded up)")
	var upstreamTargets, upstreamEnv []string
	fs.Func("upstream", "serve the tools of the MCP server `NAME=TARGET` instead of the demo tools: TARGET is an http:// or https:// Streamable HTTP endpoint, or a command line run as a stdio server (split as a shell splits words, no shell); repeatable, several serve their tools as NAME_tool (see docs/gateway.md)", func(v string) error {
		upstreamTargets = append(upstreamTargets, v)
		return nil
	})
	fs.Func("upstream-env", "give the stdio upstream NAME the environment variable `NAME=K=V` (it inherits only PATH, HOME, LANG and TMPDIR); repeatable", func(v string) error {
		upstreamEnv = append(upstreamEnv, v)
		return nil
	})
	var upstreamHeaders, upstreamAuths, upstreamTools []string
	fs.Func("upstream-header", "send the HTTP upstream NAME the header `NAME=Header-Name=VALUE` with every request, its own credential (the client's token is never sent upstream); VALUE @FILE reads a file, env:VAR a variable (use one of them for a secret); repeatable", func(v string) error {
		upstreamHeaders = append(upstreamHeaders, v)
		return nil
	})
	fs.Func("upstream-auth", "get the HTTP upstream NAME its own token, `NAME=MODE,key=value,...`: client_credentials,token_url=URL,client_id=ID,client_secret=@FILE|env:VAR[,scopes=A B][,resource=URI], or token_exchange,audience=URI[,scopes=A B] to exchange each caller's token with -auth-exchange-* (what no caller sends gets that client's own token by client credentials); one per upstream (see docs/security.md)", func(v string) error {
		upstreamAuths = append(upstreamAuths, v)
		return nil
	})
	fs.Func("upstream-tools", "serve only the tools of upstream NAME that `NAME=PATTERN[,PATTERN]` lets through: path.Match globs of its own tool names, !glob to leave tools out; a pattern that matches none of its tools fails the start; repeatable", func(v string) error {
		upstreamTools = append(upstreamTools, v)
		return nil
	})
	var upstreamShared bool
	fs.BoolVar(&upstreamShared, "upstream-shared", false, "serve every client session on one session of each upstream (one process for stdio), instead of a session (a process) per client session; its request ids are its own, so clients' ids never clash")
	fs.IntVar(&cfg.upstreamMaxProcesses, "upstream-max-processes", 32, "most processes of each stdio upstream, one per client session; the call of one session more is answered -32000 until one ends (the spare spawned ahead for the next session is counted, the process each upstream keeps for listing is not)")
	fs.Func("upstream-unchecked-tools", "what to do with an upstream's tool whose input schema the gateway cannot compile (an unsupported dialect, a cycle that validation would never leave): `serve` it with its arguments left for the upstream to validate (the default), or `drop` it", func(v string) error {
		switch v {
		case "serve", "drop":
			cfg.upstreamDropUnchecked = v == "drop"
			return nil
		}
		return fmt.Errorf("%q: want serve or drop", v)
	})
	var upstreamRequired string
	fs.StringVar(&upstreamRequired, "upstream-required", "", "the upstreams /readyz requires to be ready, `NAME[,NAME]` (default every one); the others are served when they are, and /readyz still names their state")
	fs.DurationVar(&cfg.upstreamStartTimeout, "upstream-start-timeout", 30*time.Second, "bound each start of an upstream (its process's spawn, initialize, the first listing); one that takes longer has failed, and the upstream is started again after a backoff (1 s, doubling up to 30 s)")
	var upstreamMaxMessage, upstreamMaxCatalog []string
	cfg.upstreamMaxMessage, cfg.upstreamMaxCatalog = stdio.DefaultMaxFrameSize, 16<<20
	fs.Func("upstream-max-message", "bound each message an upstream sends (a stdio line, an HTTP body or SSE event), `[NAME=]BYTES`: every upstream's, or NAME's; a longer one fails the call it answers, the upstream living on (default 4194304; a result that large also needs -max-result-bytes); repeatable", func(v string) error {
		upstreamMaxMessage = append(upstreamMaxMessage, v)
		return nil
	})
	fs.Func("upstream-max-catalog", "bound the bytes of an upstream's tools, prompts, resources and templates the gateway holds, `[NAME=]BYTES`: every upstream's, or NAME's; a listing over it fails (default 16777216); repeatable", func(v string) error {
		upstreamMaxCatalog = append(upstreamMaxCatalog, v)
		return nil
	})
	fs.DurationVar(&cfg.upstreamIdle, "upstream-idle", 5*time.Minute, "end a client session's upstream session (its stdio process) after this long without a call, give or take half of it; its next call starts a new one (0: never)")
	fs.StringVar(&toolRates, "tool-rate-limits", "", "per-tool rates of each principal's calls, as `tool=rate/burst,tool2=rate` (calls per second; burst optional); a call over it is answered -32000 with data {quota: tool_rate}; every tool named must exist")
	addQuotaFlags(fs, &cfg)
	fs.DurationVar(&cfg.sseWriteTimeout, "sse-write-timeout", streamable.DefaultWriteTimeout, "end an SSE stream whose client does not take one event within this; the session lives on")
	fs.IntVar(&cfg.maxResumptions, "max-resumptions", streamable.DefaultMaxResumptions, "most GET streams (the standalone stream and resumptions) one HTTP session has open at once; more get 429")
	fs.DurationVar(&cfg.initTimeout, "init-timeout", streamable.DefaultInitTimeout, "end an HTTP session whose client has not finished initialize and that has seen no request for this long")
	fs.IntVar(&cfg.maxSessionState, "max-session-state", streamable.DefaultMaxStateBytes, "largest state of a shared session (-redis) stored, in `bytes`; a session over it ends")
	fs.Int64Var(&cfg.maxSessionEvents, "max-session-events", redisstore.DefaultMaxSessionEventBytes, "most `bytes` of stored SSE events of one shared session (-redis), for resumption; the oldest go first")
	fs.DurationVar(&cfg.auditBlock, "audit-block", 100*time.Millisecond, "how long a tool call's audit line may wait for room when the audit log's buffer is full (its destination stalls), before it is dropped and counted in mcp_server_audit_lines_dropped_total (0: drop at once)")
	fs.DurationVar(&cfg.authCacheTTL, "auth-cache-ttl", oauth.DefaultCacheTTL, "how long an introspected active token is trusted before the authorization server is asked again: how long a revoked token keeps working (0: ask for every request); needs VIGIL_AUTH_INTROSPECTION_*")
	fs.Float64Var(&cfg.authIntrospectRate, "auth-introspection-rate", 20, "calls per second to the introspection endpoint for tokens not cached, with bursts of 2 s of it and 8 at once (half of them for one client address); over it a new token is answered 503 verifier_busy, never sent")
	fs.BoolVar(&cfg.authInsecureHTTP, "auth-insecure-http", false, "accept the authorization server (-auth-issuer, its jwks_uri and introspection_endpoint) over plain http on a non-loopback host, where anyone on the path can swap its keys and mint any token: for tests and labs only")
	fs.StringVar(&cfg.exchangeEndpoint, "auth-exchange-endpoint", "", "token endpoint `URL` of the authorization server for token exchange (RFC 8693): with it, tools get tokens for other audiences on behalf of the caller, whose own token is sent there and nowhere else (the demo tool downstream_whoami shows who such a token names); https, or http on loopback; needs -auth-exchange-client-id and VIGIL_AUTH_EXCHANGE_CLIENT_SECRET")
	fs.StringVar(&cfg.exchangeClientID, "auth-exchange-client-id", "", "client `id` vigil authenticates with at -auth-exchange-endpoint (client_secret_basic; the secret from VIGIL_AUTH_EXCHANGE_CLIENT_SECRET)")
	fs.BoolVar(&cfg.authHideTools, "auth-hide-tools", false, "answer a call of a tool whose -auth-tool-scopes the caller lacks exactly as a call of an unknown tool, for tool names that are secret; by default it gets 403 insufficient_scope naming the scopes, the step-up clients follow, and tools/list filtering hides nothing from a caller that guesses a name")
	fs.BoolVar(&cfg.authRequireDPoP, "auth-require-dpop", false, "refuse every token presented as Bearer: each request needs a DPoP-bound token (RFC 9449) under the DPoP scheme with its proof. Without it both are accepted, and a DPoP-bound token presented as Bearer is refused")
	fs.BoolVar(&cfg.authDPoPNonces, "auth-dpop-nonces", false, "DPoP proofs must carry a nonce of the server's (RFC 9449 §9), handed out in DPoP-Nonce with a 401 use_dpop_nonce, valid 5 to 10 minutes; with -redis, every replica takes the others' (keyed by VIGIL_CLUSTER_KEY)")
	fs.BoolVar(&cfg.traceContent, "trace-content", false, "record tool call arguments and results (gen_ai.tool.call.arguments, gen_ai.tool.call.result) and prompt variables (gen_ai.prompt.variable.<name>) on spans, secrets masked by the default redactor (keys like password, token, secret, authorization, api_key; bearer tokens and keys) and each value cut at 4 KiB; they may still hold personal data")
	fs.StringVar(&cfg.traceClientContext, "trace-client-context", "", "`mode` for the trace context (traceparent, baggage) in a request's _meta: trust (the request's span is its child, the client's baggage reaches handlers) or link (a trace of the server's, linked to the client's span; baggage dropped); default: link when -http is not loopback and -auth-issuer is set, else trust")
	env := map[string]string{"http": envPrefix + "HTTP_ADDR", "redis": envPrefix + "REDIS_URL"}
	fs.VisitAll(func(f *flag.Flag) {
		name, ok := env[f.Name]
		if !ok {
			name = envPrefix + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
			env[f.Name] = name
		}
		f.Usage += " (env " + name + ")"
	})
	fs.Usage = func() { usage(fs) }

	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		v := getenv(env[f.Name])
		if v == "" {
			return
		}
		if err := fs.Set(f.Name, v); err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: %w", env[f.Name], v, err))
		}
	})
	if err := errors.Join(errs...); err != nil {
		return config{}, err
	}
	fromEnv := cfg.redisURL
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if cfg.redisURL != fromEnv && flagvalue.URLHasPassword(cfg.redisURL) {
		// Argv is readable by every local user (ps, /proc): no secret there.
		return config{}, errors.New("-redis: a password on the command line is visible to every local user; pass it in VIGIL_REDIS_PASSWORD (or the URL in VIGIL_REDIS_URL) instead")
	}
	switch cfg.traceClientContext {
	case "", "trust", "link":
	default:
		return config{}, fmt.Errorf("-trace-client-context %q: want trust or link", cfg.traceClientContext)
	}
	cfg.redisPassword = getenv(envPrefix + "REDIS_PASSWORD")
	cfg.redisSentinelPassword = getenv(envPrefix + "REDIS_SENTINEL_PASSWORD")
	if (cfg.redisPassword != "" || cfg.redisSentinelPassword != "" || cfg.redisCA != "" || cfg.redisPlaintext || cfg.redisOutageUnready) && cfg.redisURL == "" {
		return config{}, fmt.Errorf("-redis-ca, -redis-insecure-plaintext, -redis-outage-unready, %sREDIS_PASSWORD and %sREDIS_SENTINEL_PASSWORD need -redis", envPrefix, envPrefix)
	}
	if v := getenv(envPrefix + "REQUEST_STATE_KEY"); v != "" {
		key, err := base64.StdEncoding.DecodeString(v)
		if err != nil || len(key) < 32 {
			return config{}, fmt.Errorf("%sREQUEST_STATE_KEY must be the base64 of at least 32 bytes", envPrefix)
		}
		cfg.stateKey = key
	}
	for _, k := range []struct {
		name string
		dst  *[]byte
	}{{"CLUSTER_KEY", &cfg.clusterKey}, {"CLUSTER_KEY_PREVIOUS", &cfg.clusterKeyPrev}} {
		if v := strings.TrimSpace(getenv(envPrefix + k.name)); v != "" {
			key, err := base64.StdEncoding.DecodeString(v)
			if err != nil || len(key) < 32 {
				return config{}, fmt.Errorf("%s%s must be the base64 of at least 32 random bytes (openssl rand -base64 48)", envPrefix, k.name)
			}
			*k.dst = key
		}
	}
	if cfg.clusterKeyPrev != nil && cfg.clusterKey == nil {
		return config{}, fmt.Errorf("%sCLUSTER_KEY_PREVIOUS is the key a rotation replaces: it needs the new one in %sCLUSTER_KEY", envPrefix, envPrefix)
	}
	if cfg.stateKey == nil && cfg.clusterKey != nil {
		// The replicas' shared secret seals requestState too: the seal's
		// associated data names the purpose, which keeps the uses apart.
		cfg.stateKey = cfg.clusterKey
	}
	cfg.introspectionClientID = getenv(envPrefix + "AUTH_INTROSPECTION_CLIENT_ID")
	cfg.introspectionSecret = getenv(envPrefix + "AUTH_INTROSPECTION_CLIENT_SECRET")
	if (cfg.introspectionClientID == "") != (cfg.introspectionSecret == "") {
		return config{}, fmt.Errorf("%sAUTH_INTROSPECTION_CLIENT_ID and %sAUTH_INTROSPECTION_CLIENT_SECRET must be set together", envPrefix, envPrefix)
	}
	if cfg.introspectionClientID != "" && cfg.authIssuer == "" {
		return config{}, fmt.Errorf("token introspection (%sAUTH_INTROSPECTION_CLIENT_ID) needs -auth-issuer, whose metadata names the introspection endpoint", envPrefix)
	}
	cfg.exchangeSecret = getenv(envPrefix + "AUTH_EXCHANGE_CLIENT_SECRET")
	if err := checkExchange(cfg); err != nil {
		return config{}, err
	}
	introspectionFlags := false
	fs.Visit(func(f *flag.Flag) { // given, in args or the environment
		introspectionFlags = introspectionFlags || f.Name == "auth-cache-ttl" || f.Name == "auth-introspection-rate"
	})
	if introspectionFlags && cfg.introspectionClientID == "" {
		return config{}, fmt.Errorf("-auth-cache-ttl and -auth-introspection-rate apply to introspected tokens (%sAUTH_INTROSPECTION_*): a JWT holds until its exp", envPrefix)
	}
	cfg.authScopes = flagvalue.SplitList(authScopes)
	toolScopes, err := parseToolScopes(authToolScopes)
	if err != nil {
		return config{}, err
	}
	cfg.authToolScopes = toolScopes
	if cfg.authPolicy, err = readPolicy(cfg); err != nil {
		return config{}, err
	}
	if cfg.upstreams, err = upstreamspec.Parse(upstreamTargets, upstreamEnv); err != nil {
		return config{}, err
	}
	if err := upstreamspec.ApplyTools(cfg.upstreams, upstreamTools); err != nil {
		return config{}, err
	}
	if err := upstreamspec.ApplyBytes(cfg.upstreams, "-upstream-max-message", upstreamMaxMessage, &cfg.upstreamMaxMessage, func(up *gateway.Upstream, n int64) {
		up.MaxMessageBytes = int(n)
	}); err != nil {
		return config{}, err
	}
	if err := upstreamspec.ApplyBytes(cfg.upstreams, "-upstream-max-catalog", upstreamMaxCatalog, &cfg.upstreamMaxCatalog, func(up *gateway.Upstream, n int64) {
		up.MaxCatalogBytes = n
	}); err != nil {
		return config{}, err
	}
	if cfg.upstreamAuth, err = upstreamspec.ParseCredentials(cfg.upstreams, upstreamHeaders, upstreamAuths, getenv); err != nil {
		return config{}, err
	}
	for name, ua := range cfg.upstreamAuth {
		if ua.Mode == upstreamspec.TokenExchange && cfg.exchangeEndpoint == "" {
			return config{}, fmt.Errorf("-upstream-auth %s: token_exchange needs -auth-exchange-endpoint", name)
		}
	}
	for i := range cfg.upstreams {
		cfg.upstreams[i].Shared = upstreamShared
	}
	if err := checkUpstreamSessions(fs, cfg); err != nil {
		return config{}, err
	}
	if cfg.upstreamRequired, err = upstreamspec.Required(cfg.upstreams, upstreamRequired); err != nil {
		return config{}, err
	}
	if cfg.toolRateLimits, err = parseToolRates(toolRates); err != nil {
		return config{}, err
	}
	for _, u := range []struct{ flag, v string }{{"-auth-issuer", cfg.authIssuer}, {"-auth-resource", cfg.authResource}} {
		if u.v == "" {
			continue
		}
		if err := flagvalue.CheckURL(u.v); err != nil {
			return config{}, fmt.Errorf("%s %q: %w", u.flag, u.v, err)
		}
	}
	if err := checkIssuerTransport(cfg.authIssuer, cfg.authInsecureHTTP); err != nil {
		return config{}, err
	}
	if (cfg.authRequireDPoP || cfg.authDPoPNonces) && !cfg.authEnabled() {
		return config{}, errors.New("-auth-require-dpop and -auth-dpop-nonces need -auth-issuer")
	}
	if cfg.authInsecureHTTP && !cfg.authEnabled() {
		return config{}, errors.New("-auth-insecure-http needs -auth-issuer")
	}
	if err := checkHideTools(cfg); err != nil {
		return config{}, err
	}
	if (cfg.authResource != "" || len(cfg.authScopes) > 0 || len(cfg.authToolScopes) > 0) && !cfg.authEnabled() {
		return config{}, errors.New("-auth-resource, -auth-scopes and -auth-tool-scopes need -auth-issuer")
	}
	if cfg.stdio && cfg.redisURL != "" {
		return config{}, errors.New("-redis shares HTTP sessions between replicas; with -stdio there is one session, its own")
	}
	if cfg.redisURL != "" && cfg.clusterKey == nil {
		return config{}, fmt.Errorf("-redis needs %sCLUSTER_KEY, the base64 of at least 32 random bytes shared by every replica (openssl rand -base64 48), from a Secret: without it whoever can write to Redis acts in any session", envPrefix)
	}
	if cfg.stdio && cfg.adminAddr != "" {
		return config{}, errors.New("-admin-http serves the observability endpoints of the HTTP server; with -stdio there is none")
	}
	if cfg.stdio && cfg.auditLog == "-" {
		return config{}, errors.New("-audit-log - (standard output) cannot be used with -stdio: standard output carries MCP")
	}
	cfg.allowedHosts = flagvalue.SplitList(allowedHosts)
	switch {
	case cfg.logFormat != "text" && cfg.logFormat != "json":
		return config{}, fmt.Errorf("-log-format %q: want text or json", cfg.logFormat)
	case cfg.grace < 0, cfg.requestTimeout < 0, cfg.idleTimeout < 0, cfg.httpIdleTimeout < 0, cfg.bodyReadTimeout < 0, cfg.listChangedDelay < 0:
		return config{}, errors.New("-shutdown-grace, -request-timeout, -idle-timeout, -http-idle-timeout, -body-read-timeout and -list-changed-delay must not be negative")
	case cfg.maxFrame <= 0 || cfg.maxBody <= 0 || cfg.maxSessions <= 0 || cfg.maxInFlight <= 0:
		return config{}, errors.New("-max-frame, -max-body, -max-sessions and -max-in-flight must be positive")
	case cfg.toolConcurrency < 0 || cfg.traceRing < 0 || cfg.gcHeadroomMiB < 0:
		return config{}, errors.New("-tool-concurrency, -trace-ring and -gc-headroom must not be negative")
	case !(cfg.rateLimit >= 0 && cfg.rateLimit <= maxRate) || cfg.rateBurst < 0:
		return config{}, fmt.Errorf("-rate-limit must be from 0 to %g, and -rate-burst not negative", float64(maxRate))
	case cfg.sseWriteTimeout <= 0 || cfg.initTimeout <= 0 || cfg.maxResumptions <= 0 || cfg.maxSessionState <= 0 || cfg.maxSessionEvents <= 0:
		return config{}, errors.New("-sse-write-timeout, -init-timeout, -max-resumptions, -max-session-state and -max-session-events must be positive")
	case cfg.maxResultBytes < 0:
		return config{}, errors.New("-max-result-bytes must not be negative")
	case cfg.auditBlock < 0 || cfg.authCacheTTL < 0:
		return config{}, errors.New("-audit-block and -auth-cache-ttl must not be negative")
	case !(cfg.authIntrospectRate > 0) || math.IsInf(cfg.authIntrospectRate, 0):
		return config{}, errors.New("-auth-introspection-rate must be a positive number")
	}
	if err := checkQuotas(cfg); err != nil {
		return config{}, err
	}
	return cfg, nil
}

// parseToolScopes parses -auth-tool-scopes, tool=scope+scope,tool2=scope,
// strictly: every item names a tool once and at least one scope, and
// neither holds spaces (scope tokens have none, RFC 6749 §3.3). Whether
// the tools exist is checked once they are registered (checkToolScopes).
func parseToolScopes(s string) (map[string][]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	m := make(map[string][]string)
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		tool, scopes, ok := strings.Cut(item, "=")
		if !ok || tool == "" || scopes == "" {
			return nil, fmt.Errorf("-auth-tool-scopes: %q: want tool=scope+scope", item)
		}
		if strings.ContainsAny(tool, " \t") {
			return nil, fmt.Errorf("-auth-tool-scopes: tool name %q has a space", tool)
		}
		if _, dup := m[tool]; dup {
			return nil, fmt.Errorf("-auth-tool-scopes: tool %q given twice", tool)
		}
		var list []string
		for sc := range strings.SplitSeq(scopes, "+") {
			if sc == "" || strings.ContainsAny(sc, " \t\"\\") {
				return nil, fmt.Errorf("-auth-tool-scopes: %q: bad scope %q", item, sc)
			}
			list = append(list, sc)
		}
		m[tool] = list
	}
	return m, nil
}

// checkIssuerTransport refuses an -auth-issuer over plain http on a
// non-loopback host unless insecure (-auth-insecure-http); middleware/auth
// checks the same of the jwks_uri and introspection_endpoint it discovers.
func checkIssuerTransport(issuer string, insecure bool) error {
	u, err := url.Parse(issuer)
	if err != nil || u.Scheme != "http" || insecure || loopback.ListenAddr(u.Hostname()) {
		return nil // "" or https; flagvalue.CheckURL has refused the rest
	}
	return fmt.Errorf("-auth-issuer %q is plain http on a non-loopback host: anyone on the path could swap its keys and mint any token, or read the introspection client secret; use https, or -auth-insecure-http for a test or lab", issuer)
}

func usage(fs *flag.FlagSet) {
	w := fs.Output()
	_, _ = fmt.Fprint(w, `Usage: vigil [flags]

Vigil serves MCP over Streamable HTTP, by default at http://127.0.0.1:8080/mcp,
or with -stdio over standard input and output. The HTTP server also serves
(with -admin-http, only its own listener does, and the MCP listener serves
only /mcp):

  /metrics       Prometheus metrics (OpenMetrics with exemplars when asked)
  /healthz       liveness: 200 while the process runs
  /readyz        readiness: 200 while serving, 503 once shutdown has begun
                 ("draining") or, with -redis, until Redis first answered
                 and, with -redis-outage-unready, while it does not
                 ("shared session store unreachable"), or, with -upstream,
                 while an upstream -upstream-required names is not ready
                 (each upstream's state, one a line: starting, ready,
                 failing, stopped)
  /debug/vigil   live page: what needs attention (errors, cancellations and
                 their causes, dropped responses, slow calls), per method/tool
                 rate, latency and outcomes, 10-minute charts, requests in
                 flight, sessions, kept traces (?format=json for JSON)

Each flag's default comes from the environment variable named after it.

Authorization: on a loopback address vigil needs no setup. On any other
address (0.0.0.0, ::, a LAN address) it refuses to start unless given
-auth-issuer URL (OAuth 2.1: /mcp needs a bearer token of that issuer,
for -auth-resource) or, knowingly, -allow-unauthenticated.

Flags:
`)
	fs.PrintDefaults()
	_, _ = fmt.Fprint(w, `
OpenTelemetry (standard variables):
  OTEL_TRACES_EXPORTER           otlp, console (to standard error) or none;
                                 unset with no OTLP endpoint: traces stay in
                                 memory for /debug/vigil (-trace-ring), and
                                 with -stdio they are dropped
  OTEL_EXPORTER_OTLP_ENDPOINT    OTLP endpoint (also ..._TRACES_ENDPOINT,
                                 ..._METRICS_ENDPOINT); setting it selects
                                 otlp for traces
  OTEL_EXPORTER_OTLP_PROTOCOL    http/protobuf (default) or grpc
  OTEL_EXPORTER_OTLP_HEADERS     and the other OTEL_EXPORTER_OTLP_* settings
  OTEL_TRACES_SAMPLER            and OTEL_TRACES_SAMPLER_ARG
                                 (default parentbased_always_on)
  OTEL_SERVICE_NAME              default vigil
  OTEL_RESOURCE_ATTRIBUTES       key=value,...
  OTEL_METRICS_EXPORTER          otlp: also push the MCP metrics over OTLP,
                                 named as OpenTelemetry names them
                                 (mcp.server.operation.duration, ...);
                                 console, or none (default): /metrics only
  OTEL_METRIC_EXPORT_INTERVAL    push period in ms (default 60000); the last
                                 push is at exit
  OTEL_SDK_DISABLED              true: no tracing, no metrics push
  OTEL_BSP_*                     batch span processor settings
Trace context (W3C traceparent, tracestate, baggage) is read from and
written to each request's params._meta; see -trace-client-context for
whether a client's is trusted.

Secrets (environment only):
  VIGIL_REQUEST_STATE_KEY        base64 of >= 32 bytes that seal the
                                 requestState of 2026-07-28 input-required
                                 results; every replica behind one load
                                 balancer needs the same key (default:
                                 VIGIL_CLUSTER_KEY when set, else a random
                                 key per process)
  VIGIL_REDIS_PASSWORD           password of -redis's user (an ACL user named
                                 in the URL: rediss://vigil@host:6379/0),
                                 instead of a password in VIGIL_REDIS_URL
  VIGIL_REDIS_SENTINEL_PASSWORD  password of the Sentinels' user (the URL's
                                 sentinel_user, or their default user) with
                                 -redis rediss+sentinel://
  VIGIL_CLUSTER_KEY              base64 of >= 32 random bytes (openssl rand
                                 -base64 48), the same on every replica,
                                 needed by -redis: relays, session records
                                 and stored events are sealed, and callers'
                                 key names hashed, with it, so that Redis
                                 cannot forge, replay or read them
  VIGIL_CLUSTER_KEY_PREVIOUS     during a rotation, the old key, still
                                 accepted; VIGIL_CLUSTER_KEY is the new one
  VIGIL_AUTH_INTROSPECTION_CLIENT_ID
  VIGIL_AUTH_INTROSPECTION_CLIENT_SECRET
                                 both or neither: verify tokens by asking
                                 the -auth-issuer's introspection endpoint
                                 (RFC 7662) with these client credentials,
                                 instead of as JWTs; the secret is never
                                 printed or logged
  VIGIL_AUTH_EXCHANGE_CLIENT_SECRET
                                 the secret of -auth-exchange-client-id at
                                 -auth-exchange-endpoint; never printed or
                                 logged

Signals: SIGTERM or SIGINT starts a graceful shutdown (/readyz turns 503,
new requests are refused, in-flight ones get -shutdown-grace, less what
stdio upstreams get to exit before they are killed); a second signal
exits at once.
`)
}

// run serves as args and the environment say, logging to stderr, until
// ctx is done, a signal arrives, or (with -stdio) the input ends.
func run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	cfg, err := parseConfig(args, getenv, stderr)
	if err != nil {
		return err
	}
	// Records are written to stderr in the background, so that no request
	// waits on it; the deferred Close, which runs last, writes what is
	// left before run returns.
	logOut := asyncwriter.New(stderr)
	defer func() { _ = logOut.Close() }()
	logger := newLogger(cfg, logOut)
	logOTelErrors(logger)
	warning, err := checkExposure(cfg)
	if err != nil {
		return err
	}
	if warning != "" {
		logger.Warn(warning, "addr", cfg.httpAddr)
	}
	audit, closeAudit, err := openAuditLog(cfg.auditLog, cfg.auditBlock, logger)
	if err != nil {
		return err
	}
	defer closeAudit() // after the servers stopped: the last calls are in

	// A write to a stdout whose reader is gone must fail with EPIPE, not
	// kill the process with SIGPIPE.
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	// Collect less often while the live heap is small (it is, serving
	// requests: a few MiB); see package gcheadroom.
	defer gcheadroom.Start(uint64(cfg.gcHeadroomMiB) << 20).Stop()

	// What /debug/vigil shows, and its trace ring, where spans go when
	// OTEL_* names no exporter: none with -stdio, nobody could read them.
	var page *debugpage.Recorder
	if cfg.debug && !cfg.stdio {
		page = debugpage.NewRecorder(debugpage.WithTraceRing(cfg.traceRing))
	}
	registry := prometheus.NewRegistry()
	if cfg.redisURL != "" {
		// Sessions shared with the other replicas on Redis: open before
		// the server, which broadcasts its changes through it.
		cfg.shared, err = redisshare.Open(ctx, redisshare.Config{
			URL: cfg.redisURL, Password: cfg.redisPassword, SentinelPassword: cfg.redisSentinelPassword,
			CAFile: cfg.redisCA, AllowPlaintext: cfg.redisPlaintext, UnreadyInOutage: cfg.redisOutageUnready,
			IdleTimeout: cfg.idleTimeout, InitTimeout: cfg.initTimeout,
			MaxSessionEventBytes: cfg.maxSessionEvents, Logger: logger, Registerer: registry,
			ClusterKey: cfg.clusterKey, PreviousClusterKey: cfg.clusterKeyPrev,
		})
		if err != nil {
			return err
		}
		defer func() { _ = cfg.shared.Close() }()
	}
	var auditOut io.Writer // a nil *asyncwriter.Writer would not be a nil io.Writer
	auditDropped := func() uint64 { return 0 }
	if audit != nil {
		auditOut, auditDropped = audit, audit.Dropped
	}
	f := &front{cfg: cfg}
	defer f.close()
	opts := f.options()
	if page != nil && len(cfg.upstreams) > 0 {
		opts = append(opts, vigil.WithPage(page, debugpage.WithStatus(f.upstreamLines))) // each upstream's state on the live page
	}
	if page != nil && cfg.traceRing == 0 {
		// -trace-ring 0: the page keeps no trace, so spans go where
		// OTEL_* says or nowhere, not to the page's ring.
		none := func(context.Context) (sdktrace.SpanExporter, error) { return nil, nil }
		tp, shutdown, err := otelsetup.TracerProvider(ctx, otelsetup.WithService("vigil", version),
			otelsetup.WithFallbackExporter(none), otelsetup.WithConsoleWriter(os.Stderr))
		if err != nil {
			return err
		}
		defer func() { _ = shutdown(context.Background()) }()
		opts = append(opts, vigil.WithTracerProvider(tp))
	}
	svc, err := newService(cfg, logger, registry, page, auditOut, opts...)
	if err != nil {
		return err
	}
	f.svc = svc
	if len(cfg.upstreams) > 0 {
		// The upstreams' tools, in place of the demo tools: mounted
		// before serving, checked as the demo tools are.
		f.creds = &upstreamspec.Credentials{}
		gcfg := upstreamConfig(cfg, logger)
		gcfg.Upstreams, gcfg.Registerer, gcfg.ToolScopes = f.creds.Apply(cfg.upstreams, cfg.upstreamAuth, upstreamspec.ExchangeClient{Endpoint: cfg.exchangeEndpoint, ID: cfg.exchangeClientID, Secret: cfg.exchangeSecret}), registry, demoToolScopes(cfg)
		mctx, cancel := context.WithTimeout(ctx, upstreamWait(cfg))
		g, err := gateway.Mount(mctx, svc.Server, gcfg)
		cancel()
		if err != nil {
			return err
		}
		defer func() { _ = g.Close() }() // after serving: the calls in flight are done
		f.gateway.Store(g)
		names := knownToolNames(cfg, svc.Server.ToolNames(), g.Upstreams(), logger)
		if err := checkToolNames(cfg, names); err != nil {
			return err
		}
		if err := checkToolScopes(names, cfg.authToolScopes); err != nil {
			return err
		}
	}
	// Records the outcomes the last requests left waiting for their batch
	// and flushes the spans and metrics, before the log flush, when run
	// returns before serving (the serve methods do it themselves).
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), cfg.grace)
		defer cancel()
		_ = svc.Shutdown(sctx)
	}()
	if err := svc.Register(metrics.NewLogLinesDropped(logOut.Dropped)); err != nil {
		return err
	}
	if err := svc.Register(metrics.NewAuditLinesDropped(auditDropped)); err != nil {
		return err
	}
	context.AfterFunc(ctx, stop) // a second signal kills the process
	if cfg.stdio {
		if cfg.authEnabled() {
			svc.Logger.Warn("-auth-issuer guards HTTP requests only: the stdio client, the process that started vigil, is asked for no token and may use every tool")
		}
		return svc.ServeStdio(ctx, stdio.WithMaxFrameSize(cfg.maxFrame))
	}
	return svc.ListenAndServe(ctx, cfg.httpAddr, cfg.adminAddr)
}

// openAuditLog opens the audit log of -audit-log: nil for "", standard
// output for "-", else the file, appended to (created 0600). Lines are
// written in the background (asyncwriter), so that no call waits on the
// file; a line that finds the buffer full waits up to block for room, then
// is dropped and counted (mcp_server_audit_lines_dropped_total), and
// closeLog, which writes what is left and closes the file, logs how many
// were.
func openAuditLog(path string, block time.Duration, logger *slog.Logger) (w *asyncwriter.Writer, closeLog func(), err error) {
	var out io.Writer = os.Stdout
	closeOut := func() {}
	switch path {
	case "":
		return nil, func() {}, nil
	case "-":
	default:
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return nil, nil, fmt.Errorf("-audit-log: %w", err)
		}
		out, closeOut = f, func() { _ = f.Close() }
	}
	aw := asyncwriter.New(out, asyncwriter.WithBlock(block))
	return aw, func() {
		_ = aw.Close()
		closeOut()
		if n := aw.Dropped(); n > 0 {
			logger.Warn("audit log lines dropped: the audit log's destination was too slow", "lines", n, "audit_log", path)
		}
	}, nil
}

// newLogger returns the process's logger, on stderr (a buffer in front of
// it, in run); the service's (vigil.WithLogger) adds the trace, span,
// session and request ids of a handler's context to its records. The
// invisible characters a client chose (bidirectional controls) are escaped
// in either format: the text format quotes them (\u202e), and the JSON
// lines pass through invisible.Writer, since encoding them is not
// slog.JSONHandler's concern.
func newLogger(cfg config, stderr io.Writer) *slog.Logger {
	var h slog.Handler = slogtext.NewHandler(stderr, cfg.logLevel) // slog.TextHandler's output, cheaper
	if cfg.logFormat == "json" {
		h = slog.NewJSONHandler(invisible.Writer{W: stderr}, &slog.HandlerOptions{Level: cfg.logLevel})
	}
	return slog.New(h)
}

// logOTelErrors sends the OpenTelemetry SDK's errors (a failed export, a
// bad sampler setting) to logger instead of the standard log package. It
// sets the global error handler: call it from the binary only.
func logOTelErrors(logger *slog.Logger) {
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		logger.Warn("opentelemetry", "error", err)
	}))
}
