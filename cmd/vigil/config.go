package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/vigil-mcp/vigil/cmd/internal/catalogfile"
	"github.com/vigil-mcp/vigil/cmd/internal/connect"
	"github.com/vigil-mcp/vigil/cmd/internal/flagvalue"
	"github.com/vigil-mcp/vigil/cmd/internal/servercard"
	"github.com/vigil-mcp/vigil/cmd/internal/upstreamspec"
	"github.com/vigil-mcp/vigil/gateway"
	"github.com/vigil-mcp/vigil/internal/loopback"
	"github.com/vigil-mcp/vigil/middleware/policy"
	"github.com/vigil-mcp/vigil/redisshare"
)

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
	discovery        servercard.Flags // -discovery, -public-url, -registry-name, -registry-image, -server-json
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
	toolRateLimits map[string]flagvalue.ToolRate

	adminAddr string // -admin-http: the observability endpoints' own listener; "": on the MCP listener
	auditLog  string // -audit-log: a file, or "-" for standard output; "": none
	skillsDir string // -skills: a directory of Agent Skills to serve; "": none

	upstreamAuth map[string]upstreamspec.Auth // -upstream-auth, by upstream name: its secrets never printed
	connect      connect.Flags                // -connect-*: the gateway's client at -auth-issuer, for the user mode
	upstreams    []gateway.Upstream           // -upstream, -upstream-env, -upstream-shared: the MCP servers fronted instead of the demo tools
	// An upstream session per downstream session (gateway.Config).
	upstreamMaxProcesses  int               // -upstream-max-processes: processes of each stdio upstream serving one session each
	upstreamSandboxDir    string            // -upstream-sandbox-dir: where the sandboxed upstreams' private directories are made
	upstreamIdle          time.Duration     // -upstream-idle: end a session's upstream session idle for this long (0: never)
	upstreamDropUnchecked bool              // -upstream-unchecked-tools drop: leave out the tools whose input schema cannot be compiled
	upstreamRequired      []string          // -upstream-required: the upstreams /readyz requires; empty, every one
	upstreamStartTimeout  time.Duration     // -upstream-start-timeout: bounds each start of an upstream (spawn, initialize, listing)
	upstreamMaxMessage    int64             // -upstream-max-message BYTES: every upstream's bound on a message (NAME=BYTES: in upstreams)
	upstreamMaxCatalog    int64             // -upstream-max-catalog BYTES: every upstream's bound on its catalog (NAME=BYTES: in upstreams)
	catalogFlags          catalogfile.Flags // -catalog, -catalog-lock, -catalog-lock-write, -catalog-search
	catalog               *gateway.Catalog  // -catalog's, with its -catalog-lock

	// Quotas per caller (quota.go): the user (issuer and subject), or the client's IP (IPv6: its network).
	quotaSessions   int     // -quota-sessions: concurrent sessions (0: none)
	quotaEvictIdle  bool    // -quota-evict-idle: over it, end the caller's idlest session instead of refusing
	quotaInFlight   int     // -quota-in-flight: requests in flight over all its sessions and stateless requests (0: none)
	quotaBytes      int64   // -quota-bytes: bytes of request bodies and unwritten answers one caller holds (0: none)
	memoryBudget    int64   // -memory-budget: bytes of request bodies and unwritten answers all callers hold (0: from GOMEMLIMIT; -1: none)
	quotaTasks      int     // -quota-tasks: tasks held (0: none)
	quotaIPv6Prefix int     // -quota-ipv6-prefix: bits of an unauthenticated IPv6 caller's network
	quotaToolShare  float64 // -quota-tool-share: fraction of each tool's slots (0 or 1: none)
	// -quota-process-share: fraction of each stdio upstream's processes once another caller needs one (0 or 1: none)
	quotaProcessShare float64
	overloadTarget    time.Duration // -overload-target: queueing delay over which requests are shed (0: never)
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

// A flagGroup is the flags of one concern. register defines them on fs,
// bound to cfg's fields or to the group's own raw values; resolve, once
// the flags are parsed, turns the raw values into cfg's and refuses what
// the concern's flags say wrong, alone or with the flags of a concern
// resolved before it.
type flagGroup interface {
	register(fs *flag.FlagSet, cfg *config)
	resolve(cfg *config, src flagSource) error
}

// flagSource is what resolve reads beside the flags' values.
type flagSource struct {
	getenv  func(string) string // the environment, for the secrets no flag carries
	given   map[string]bool     // the flags given, in args or the environment
	fromEnv map[string]string   // the values the environment gave flags, by flag name
}

// flagGroups returns the groups of vigil's flags, in the order they are
// resolved.
func flagGroups() []flagGroup {
	return []flagGroup{
		&serveFlags{},   // -http, -stdio, -admin-http, -allowed-hosts, -allow-unauthenticated, -skills, -shutdown-grace
		limitFlags{},    // -max-*, timeouts, -tool-concurrency, -gc-headroom
		observeFlags{},  // -log-*, -debug, -trace-*, -audit-*
		sharedFlags{},   // -redis*, VIGIL_CLUSTER_KEY*, VIGIL_REQUEST_STATE_KEY
		&authFlags{},    // -auth-*, VIGIL_AUTH_*
		quotaFlags{},    // -quota-*, -memory-budget, -overload-target
		&rateFlags{},    // -rate-*, -tool-rate-limits: after auth (hidden tools)
		&gatewayFlags{}, // -upstream*: after auth (token exchange)
	}
}

// parseConfig reads the configuration from args and, for flags not given,
// from the environment through getenv (VIGIL_ and the flag's name in upper
// case, dashes as underscores; -http is VIGIL_HTTP_ADDR). An empty variable
// counts as unset. -h prints the usage to out and returns flag.ErrHelp.
func parseConfig(args []string, getenv func(string) string, out io.Writer) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("vigil", flag.ContinueOnError)
	fs.SetOutput(out)
	groups := flagGroups()
	for _, g := range groups {
		g.register(fs, &cfg)
	}
	env := envNames(fs)
	// -version, defined after envNames, has no variable: one named
	// VIGIL_VERSION is too likely set for something else.
	showVersion := fs.Bool("version", false, "print vigil's version, the commit it was built from, and the Go version, and exit")
	fs.Usage = func() { usage(fs) }
	src := flagSource{getenv: getenv, given: map[string]bool{}, fromEnv: map[string]string{}}
	envErr := setFromEnv(fs, env, src) // returned after -version, which prints the version whatever the environment
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if *showVersion {
		return config{}, errVersion
	}
	if envErr != nil {
		return config{}, envErr
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	fs.Visit(func(f *flag.Flag) { src.given[f.Name] = true })
	for _, g := range groups {
		if err := g.resolve(&cfg, src); err != nil {
			return config{}, err
		}
	}
	return cfg, nil
}

// envNames returns the variable of each flag of fs, by flag name, and
// names it at the end of the flag's usage.
func envNames(fs *flag.FlagSet) map[string]string {
	env := map[string]string{"http": envPrefix + "HTTP_ADDR", "redis": envPrefix + "REDIS_URL"}
	fs.VisitAll(func(f *flag.Flag) {
		name, ok := env[f.Name]
		if !ok {
			name = envPrefix + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
			env[f.Name] = name
		}
		f.Usage += " (env " + name + ")"
	})
	return env
}

// setFromEnv sets each flag of fs whose variable (env) is not empty, and
// records the value in src.fromEnv.
func setFromEnv(fs *flag.FlagSet, env map[string]string, src flagSource) error {
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		name, ok := env[f.Name]
		if !ok {
			return // -version
		}
		v := src.getenv(name)
		if v == "" {
			return
		}
		if err := fs.Set(f.Name, v); err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: %w", env[f.Name], v, err))
			return
		}
		src.fromEnv[f.Name] = v
	})
	return errors.Join(errs...)
}
