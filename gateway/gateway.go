package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vigil-mcp/vigil/gateway/internal/openapi"
	"github.com/vigil-mcp/vigil/gateway/internal/upstream"
	"github.com/vigil-mcp/vigil/internal/metrics"
	"github.com/vigil-mcp/vigil/internal/vocab"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// maxListed bounds the tools, prompts, resources or templates one
// upstream may list.
const maxListed = 10_000

// defaultMaxCatalog is [Upstream].MaxCatalogBytes's default.
const defaultMaxCatalog = 16 << 20

// maxCatalog returns the bytes the upstream's catalog may hold
// (Upstream.MaxCatalogBytes).
func (m *mount) maxCatalog() int64 {
	if m.up.MaxCatalogBytes < 1 {
		return defaultMaxCatalog
	}
	return m.up.MaxCatalogBytes
}

// Upstream describes an MCP server to front: a stdio server (Command) or
// a Streamable HTTP one (URL); exactly one of them is set.
type Upstream struct {
	// Name names the upstream in logs and, when several are mounted, is
	// the prefix of its tools' names (NAME_tool): letters, digits, '-'
	// and '.'.
	Name string
	// Command is the program and arguments of a stdio upstream, run
	// without a shell, in a process group of its own.
	Command []string
	// Env is the stdio upstream's environment, K=V entries, besides PATH,
	// HOME, LANG and TMPDIR, which it inherits; it inherits nothing else.
	Env []string
	// URL is the endpoint of a Streamable HTTP upstream; for an OpenAPI
	// upstream, the base URL its operations are called at (empty: the
	// description's first servers entry).
	URL string
	// OpenAPI, when set, makes this a REST API upstream: the operations of
	// this OpenAPI 3.0 or 3.1 description (JSON or YAML; Swagger 2.0 and
	// external $refs refused) are its tools, each call an HTTP request to
	// URL (docs/gateway.md, "REST APIs (OpenAPI)"). Command must be empty;
	// Header, and Credentials' headers got with the caller's context, are
	// sent with each request; Refused is asked on the API's 401 to a call.
	// Mount fails on a description it cannot load.
	OpenAPI []byte
	// Header is sent with every request to an HTTP upstream: its own
	// credentials. A caller's token is never sent upstream.
	Header http.Header
	// Credentials, when set, returns headers for each request to an HTTP
	// upstream besides Header: its own token, got by client credentials or
	// by exchanging the caller's token for one of the upstream's audience.
	// ctx is the downstream call's context for what a call sends (its
	// tools/call, its cancel), else one of the gateway's own (initialize,
	// listings, the GET stream). An error fails that request only; its
	// text must hold no secret.
	Credentials func(ctx context.Context) (http.Header, error)
	// Authorize, when set, is asked before each caller's request (a
	// tools/call, a resources/read, ...) goes to the upstream, with the
	// caller's ctx: an error answers the caller as it is (a
	// *server.Error keeps its code and data, -32042 asking the user to
	// authorize the upstream in a browser) and nothing is sent. What no
	// caller sends (initialize of the catalog's session, listings) is not
	// asked about.
	Authorize func(ctx context.Context) error
	// Refused, when set, is asked when the HTTP upstream answers HTTP
	// 401 to a caller's request (the credentials of Credentials
	// refused), with the caller's ctx; again is false the first time,
	// true when the request was sent once more already. nil sends the
	// request once more (a 401 means the upstream did nothing, so any
	// request may be); an error answers the caller as it is, as
	// Authorize's does. A third 401 answers -32603.
	Refused func(ctx context.Context, again bool) error
	// Tools, when not empty, filters the upstream's tools by their own
	// names (before any prefix): a tool is served when a pattern matches
	// it (path.Match globs; every tool when all patterns are denials) and
	// no denial ("!" and a glob) does. A tool left out is neither listed
	// nor callable, after a list_changed too. A pattern that matches none
	// of the upstream's tools at Mount fails it.
	Tools []string
	// Shared makes every downstream session share one upstream session
	// (one process for stdio), whose request ids are its own; by default
	// each downstream session gets one of its own at its first call.
	Shared bool
	// MaxMessageBytes bounds each message the upstream sends: a stdio
	// line, an HTTP JSON body or SSE event (4 MiB when below 1). A longer
	// one is dropped unread and fails only the call it answers (-32603
	// naming the bound), the session and its process living on; see
	// docs/gateway.md, "Bounds on what an upstream sends".
	MaxMessageBytes int
	// Sandbox confines a stdio upstream's processes; its zero value is the
	// default profile, "none" (see [Sandbox]).
	Sandbox Sandbox
	// MaxCatalogBytes bounds what the gateway holds of the upstream's
	// catalog: the bytes of the items its tools/list, prompts/list,
	// resources/list and resources/templates/list answer, as JSON,
	// together (16 MiB when below 1). A listing over it fails, logged: a
	// first one leaves the upstream failing (started again with backoff),
	// a later one keeps what was listed before.
	MaxCatalogBytes int64
}

// Config configures [Mount].
type Config struct {
	// Upstreams are the servers to front, at least one.
	Upstreams []Upstream
	// Logger receives the gateway's logs and each stdio upstream's
	// stderr; nil discards them.
	Logger *slog.Logger
	// Registerer, if not nil, gets the gateway's metrics, labeled by
	// upstream name: the calls forwarded and their duration, the starts,
	// the sessions live and what was dropped of what upstreams sent (see
	// docs/operations.md). Mount fails if they cannot be registered.
	Registerer prometheus.Registerer
	// ToolScopes gives the upstreams' tools the scopes a caller needs
	// ([server.Tool.Scopes]), by the name they are served under (with
	// their NAME_ prefix when several upstreams are mounted). Mount does
	// not check that each name is served.
	ToolScopes map[string][]string
	// SandboxDir is where each sandboxed stdio upstream's private
	// directory (its HOME and TMPDIR, kept across its starts) is made,
	// as SandboxDir/NAME: a directory of the gateway's user that no other
	// may write. Empty: vigil-sandbox-UID in the system's temporary
	// directory.
	SandboxDir string
	// MaxProcesses bounds the processes of each stdio upstream that
	// serve one downstream session each (32 when below 1); the call that
	// would start one more is refused with -32000 (server busy), unless
	// ProcessShare reclaims one. The process spawned ahead for the next
	// session (spare.go) and those tool views are listed on (views.go)
	// are counted, the process every upstream keeps for listing is not.
	MaxProcesses int
	// ProcessShare is the fraction of MaxProcesses one caller (as Caller
	// names it) may hold once another caller's session needs a process:
	// at the bound, an idle process of the caller holding the most over
	// its share (at least one process) is ended for the newcomer, which
	// is refused only when none is. A caller may hold more while there is
	// room. No share when 0 or 1 or above, or without Caller.
	ProcessShare float64
	// Caller names the caller a request belongs to, for ProcessShare: a
	// bounded key (a user, a client's address). Nil: no share.
	Caller func(*server.Request) string
	// IdleTimeout ends the upstream session of a downstream session, and
	// its process, once it has had no call in flight for this long, give
	// or take half of it (5 minutes when 0; never when negative); its
	// next call starts a new one.
	IdleTimeout time.Duration
	// DropUncheckedTools leaves out, unserved, an upstream's tool whose
	// input schema the gateway's server cannot compile (see
	// docs/gateway.md, Schemas), instead of serving it with its
	// arguments left for the upstream to validate; each is logged once.
	DropUncheckedTools bool
	// StartTimeout bounds each start of an upstream session: the spawn
	// of its process, initialize and, for the session the gateway keeps
	// for listing, the first listing (2 minutes when 0 or less: room for
	// a command such as npx -y to fetch its package on its first run). A
	// start that outlasts it has failed: the upstream's next waits out a
	// backoff. A start under way is logged every 10 s.
	StartTimeout time.Duration
	// Required names the upstreams Health requires to be ready; empty,
	// every one. Mount fails when it names an upstream not in Upstreams.
	Required []string
	// Catalog, when not nil, is the operator's catalog ([ParseCatalog]):
	// how the upstreams' tools and prompts are served, and the named
	// endpoints ([Gateway.Endpoint]). Mount fails when it names an
	// upstream not in Upstreams. [Gateway.SetCatalog] replaces it.
	Catalog *Catalog
	// StopGrace bounds how long the end of a stdio upstream's session
	// (Close included) waits for its process to exit once its input is
	// closed: SIGTERM to its process group at half of it, SIGKILL at its
	// end (2 s when 0 or less). Close ends every upstream at once, so it
	// returns within about twice StopGrace, whatever the upstreams do.
	StopGrace time.Duration
	// Search serves the tools through a search (docs/gateway.md, "Search
	// instead of the full list"): tools/list lists two tools, search_tools,
	// which answers the definitions of the tools that best match a query
	// (BM25F over their names, titles, descriptions and arguments, in
	// process; docs/gateway.md says how well it finds), and
	// call_tool, which calls one by its name, as a call of that tool in
	// every respect (server.Server.SetToolSearch). A caller searches what
	// it would list. It is the default endpoint's; a catalog endpoint
	// searches with its search: true (docs/gateway.md). Mount fails when
	// the server has a tool of either name already.
	Search bool
	// AuditLog, when not nil, gets one JSON line per change that a
	// pinned upstream's listing brings (docs/operations.md, "Audit log"):
	// a tool whose definition is not the one in the catalog lock, once per
	// served name and digest, as it is logged and counted. Writes to it
	// must not block for long (cmd/vigil gives its audit log's writer).
	AuditLog io.Writer

	now     func() time.Time      // the clock; nil: time.Now (tests set it: export_test.go)
	spawned func(pid int)         // told of each spare process kept (tests set it: export_test.go)
	noSpare bool                  // keep no spare process (benchmarks compare: export_test.go)
	dial    func() transport.Conn // connects to a URL upstream instead of HTTP (tests in fake time set it: export_test.go)
}

// Gateway is the upstreams [Mount] mounted on a server. Close ends their
// sessions and processes.
type Gateway struct {
	srv    *server.Server
	mounts []*mount
	scopes map[string][]string // Config.ToolScopes
	obs    *metrics.Upstreams  // nil without Config.Registerer
	tally  map[string]*tally   // by upstream name: what its sessions dropped
	watch  sync.WaitGroup      // the goroutines that wait for a session's end (track)

	mu     sync.Mutex        // guards owners, mounting and each mount's cat and first
	owners map[string]string // "tool \"name\"" (prompt, resource, resource template) -> who serves it
	// ownInstructions are the server's own instructions, at Mount: the
	// upstreams' are added to them (instructions.go).
	ownInstructions string
	mounting        bool // Mount has not registered yet what was ready at its end
	// viewIndex maps each registered tool to its upstream (views.go);
	// written under mu.
	viewIndex atomic.Pointer[map[string]viewEntry]
	// itemIndex maps each registered prompt, resource and template, by
	// kind and key ("prompt NAME"), to its upstream and own name, for
	// showsItem (endpoints.go); written under mu.
	itemIndex atomic.Pointer[map[string]itemEntry]
	audit     io.Writer // Config.AuditLog; nil: none (pinning.go)
	searching bool      // Config.Search, or an endpoint's search: the server's tool search is the gateway's (search.go)
	// searchDefault is Config.Search: the default endpoint searches; a
	// named endpoint searches when its search is true (showsTool).
	searchDefault bool
	// catalog is the operator's catalog now (Config.Catalog, SetCatalog);
	// nil: every item as its upstream lists it (curation.go).
	catalog atomic.Pointer[Catalog]
	log     *slog.Logger // Config.Logger
}

// mount is one upstream mounted: the catalog's session, which lists
// and serves a shared upstream, and a session per downstream session
// otherwise (sessions.go); the catalog's is started again as soon as it
// goes (refreshLoop), a downstream session's by its next call.
type mount struct {
	g      *Gateway
	up     Upstream
	prefix string // "" or NAME_
	log    *slog.Logger
	tools  toolFilter   // Upstream.Tools
	client *http.Client // an HTTP upstream's, shared by its sessions; nil for stdio
	rest   *restAPI     // an OpenAPI upstream's tools, served in process (openapi.go); nil for others
	cat    *catalog     // what is registered; guarded by g.mu
	// instructions are those the listing session's initialize answered,
	// the last time it started; guarded by g.mu (instructions.go).
	instructions string
	// unchecked names the tools whose input schema the server could not
	// compile, warned about once (see catalog.addTool); guarded by g.mu.
	unchecked map[string]bool
	// withheld names the tools the catalog could not serve as it says,
	// warned about and counted once per catalog (curation.go).
	withheld sync.Map
	// pinned names the changes of pinned definitions told, by served name
	// and digest, each logged and counted once (pinning.go).
	pinned        sync.Map
	dropUnchecked bool // Config.DropUncheckedTools

	ctx          context.Context // ends when Close begins
	stop         context.CancelFunc
	now          func() time.Time
	maxProcesses int           // Config.MaxProcesses
	share        processShare  // Config.ProcessShare (share.go)
	idle         time.Duration // Config.IdleTimeout; negative: never
	startTimeout time.Duration // Config.StartTimeout
	stopGrace    time.Duration // Config.StopGrace; 0: the process's default
	required     bool          // Config.Required names it, or is empty
	sandbox      *sandboxed    // a stdio upstream's confinement; nil: off (sandbox.go)
	catalog      *link         // the session that lists, follows list_changed, serves Shared and stateless calls
	era          *link         // a 2026-07-28 session, for 2026-07-28 callers' rounds (era2026.go)
	noEra        atomic.Bool   // the upstream does not speak 2026-07-28
	staleEra     atomic.Bool   // the 2026-07-28 session said a list changed

	state      stateOf       // lifecycle.go
	settled    chan struct{} // closed once the first start is over, ready or failed (settle)
	settleOnce sync.Once
	first      *catalog    // listed before Mount registered the upstreams ready by then: Mount registers it; guarded by g.mu
	listed     atomic.Bool // a listing succeeded once
	readable   atomic.Bool // its listing declared resources: it may serve some unlisted (unlisted.go)
	views      toolViews   // what it lists for clients of other capabilities (views.go)

	mu        sync.Mutex                // guards sessions and their links' busy, lastUsed and caller, spare, spawning, viewing and lastClaim; never held during I/O
	sessions  map[*server.Session]*link // the links of downstream sessions
	callers   map[string]*link          // the links of callers without a session, by caller key, of an upstream with Authorize (callers.go)
	spare     *upstream.Process         // spawned ahead for the next downstream session (spare.go); nil: none
	viewing   int                       // processes held by tool views being listed (views.go)
	spawning  bool                      // a spare is being spawned (spare.go)
	lastClaim time.Time                 // when a downstream session's link last took a process (or Mount)
	refill    chan struct{}             // 1-buffered: spawn a spare (spareLoop; coalesced)
	spawned   func(pid int)             // Config.spawned
	noSpare   bool                      // Config.noSpare
	dial      func() transport.Conn     // Config.dial
	pingless  atomic.Bool               // the upstream's spare did not answer a ping: spares are not pinged (spare.go)

	starts, refused atomic.Int64 // sessions started; calls refused by MaxProcesses
	calls           callTally    // the calls forwarded, for the status (upstream_view.go)

	waiting   waitingCalls   // stateless callers' calls waiting for their retry (rounds.go)
	stale     chan struct{}  // 1-buffered: the upstream said a list changed (coalesced)
	subs      subscriptions  // what it follows for more than one caller (subscriptions.go)
	check     chan struct{}  // 1-buffered: a start failed; is the catalog's session alive? (coalesced)
	refresher sync.WaitGroup // the goroutine that lists again and keeps the catalog's session (refreshLoop)
	watchers  sync.WaitGroup // a goroutine per downstream session's link: it closes it when that session ends
	closing   sync.WaitGroup // the closes of connections that went
}

// conn is one session with an upstream, and its process for stdio.
type conn struct {
	session *upstream.Session
	process *upstream.Process // nil for HTTP
}

// pid returns the process id of a stdio upstream's session to log, an
// empty attribute for HTTP.
func (c *conn) pid() slog.Attr {
	if c.process == nil {
		return slog.Attr{}
	}
	return slog.Int("pid", c.process.Pid())
}

// close ends the session and the process.
func (c *conn) close() {
	_ = c.session.Close()
	if c.process != nil {
		_ = c.process.Close()
	}
}

// Mount starts each upstream of cfg in the background, each start
// bounded by cfg.StartTimeout, and waits until each is ready or has
// failed its first start, or until ctx is done. It registers on srv what
// those ready offer (tools, prompts, resources, templates), with handlers
// that forward each call; an upstream not ready by then is started again,
// with backoff, until Close, and registered once ready (see
// [Gateway.Upstreams]). With several upstreams each tool and prompt is
// named NAME_name and each template's name is prefixed likewise; URIs
// are kept. Mount fails, having closed what it opened, only for cfg
// itself, or when two upstreams ready at its end (or one and srv) would
// share a name or URI, or a tool filter matches none of the tools of
// one. When an upstream serves skills, srv's skill finder is set so that
// a skill it serves unlisted is served once a client names it.
func Mount(ctx context.Context, srv *server.Server, cfg Config) (*Gateway, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if err := checkUpstreams(cfg.Upstreams); err != nil {
		return nil, err
	}
	if err := checkRequired(cfg.Upstreams, cfg.Required); err != nil {
		return nil, err
	}
	if err := cfg.Catalog.check(cfg.Upstreams); err != nil { // catalog_file.go
		return nil, err
	}
	if cfg.MaxProcesses < 1 {
		cfg.MaxProcesses = defaultMaxProcesses
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = defaultIdleTimeout
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = defaultStartTimeout
	}
	if cfg.now == nil {
		cfg.now = time.Now
	}
	g := &Gateway{srv: srv, owners: map[string]string{}, scopes: cfg.ToolScopes, mounting: true, ownInstructions: srv.Instructions(), audit: cfg.AuditLog}
	g.log = cfg.Logger
	g.catalog.Store(cfg.Catalog)
	cfg.Catalog.sayDefault(g.log) // catalog_file.go
	// An upstream may be ready after the first client initializes: that
	// client must still be told the server has tools, prompts and
	// resources, and hear them come; and an upstream's session resources
	// are read though it lists none (unlisted.go).
	srv.ExpectFeatures()
	g.searchDefault = cfg.Search
	if cfg.Search || cfg.Catalog.searches() {
		if err := g.searchOn(cfg.Upstreams); err != nil { // search.go
			return nil, err
		}
	}
	for _, n := range srv.ToolNames() {
		g.owners["tool "+strconv.Quote(n)] = "the server itself"
	}
	boxes := make([]*sandboxed, len(cfg.Upstreams))
	cfg.Upstreams = slices.Clone(cfg.Upstreams) // the catalog's sandboxes go in the gateway's copy
	for i := range cfg.Upstreams {
		if err := cfg.Catalog.applySandbox(&cfg.Upstreams[i]); err != nil { // sandbox.go
			return nil, err
		}
	}
	apis := make([]*openapi.API, len(cfg.Upstreams))
	for i, up := range cfg.Upstreams {
		if up.OpenAPI == nil {
			continue
		}
		var err error
		if apis[i], err = loadOpenAPI(up); err != nil { // openapi.go
			_ = srv.SetToolSearch(nil)
			return nil, err
		}
		cfg.Upstreams[i].URL = apis[i].Base() // served as an HTTP upstream is: no process
	}
	if err := cfg.Catalog.checkOperations(apisByName(cfg.Upstreams, apis)); err != nil { // restpick.go
		_ = srv.SetToolSearch(nil)
		return nil, err
	}
	for i, up := range cfg.Upstreams {
		var err error
		if boxes[i], err = newSandboxed(up, cfg.SandboxDir, cfg.Logger.With("upstream", up.Name)); err != nil { // sandbox.go
			_ = srv.SetToolSearch(nil)
			return nil, err
		}
		switch {
		case up.URL != "":
		case up.Sandbox.Off:
			cfg.Logger.Warn("upstream runs unsandboxed: it reaches all the gateway's user can (its files, secrets and network)", "upstream", up.Name)
		case slices.Contains(up.Sandbox.Network, allNetwork):
			cfg.Logger.Warn("sandboxed upstream has the gateway's own network: it reaches every host the gateway can, loopback and private addresses included", "upstream", up.Name)
		}
	}
	for i, up := range cfg.Upstreams {
		m := &mount{
			sandbox: boxes[i],
			g:       g, up: up, log: cfg.Logger, now: cfg.now, maxProcesses: cfg.MaxProcesses, share: shareOf(cfg), idle: cfg.IdleTimeout, dropUnchecked: cfg.DropUncheckedTools,
			startTimeout: cfg.StartTimeout, stopGrace: cfg.StopGrace, required: len(cfg.Required) == 0 || slices.Contains(cfg.Required, up.Name),
			sessions: map[*server.Session]*link{}, callers: map[string]*link{}, lastClaim: cfg.now(), refill: make(chan struct{}, 1), spawned: cfg.spawned, noSpare: cfg.noSpare, dial: cfg.dial, stale: make(chan struct{}, 1), check: make(chan struct{}, 1), settled: make(chan struct{}),
		}
		m.tools, _ = parseToolFilter(up.Tools) // checked by checkUpstreams
		if up.URL != "" {
			m.client = upstreamClient()
		}
		if apis[i] != nil {
			m.client = restClient()
			m.rest = newRESTAPI(apis[i], up, m.client, cfg.Logger.With("upstream", up.Name)) // openapi.go
		}
		m.ctx, m.stop = context.WithCancel(context.Background())
		m.catalog = m.newLink(nil)
		m.era = m.newLink(nil)
		m.era.stateless = true
		if len(cfg.Upstreams) > 1 {
			m.prefix = up.Name + "_"
		}
		g.mounts = append(g.mounts, m)
	}
	if err := g.observe(cfg); err != nil {
		for _, m := range g.mounts {
			m.stop()
			if m.rest != nil {
				m.rest.close()
			}
		}
		_ = srv.SetToolSearch(nil)
		return nil, err
	}
	for _, m := range g.mounts {
		m.refresher.Go(m.refreshLoop) // starts it at once
		if m.wantsSpare() {
			m.refresher.Go(m.spareLoop) // spare.go
		}
	}
	for _, m := range g.mounts {
		select {
		case <-m.settled:
		case <-ctx.Done():
		}
	}
	if err := g.registerFirst(); err != nil {
		_ = g.Close() // not under g.mu: closing waits for a refresh that may want it
		return nil, err
	}
	srv.SetResourceFallback(g.readUnlisted)  // unlisted.go
	srv.SetToolView(g.showsTool)             // views.go
	srv.SetItemView(g.showsItem)             // endpoints.go
	srv.SetResourceSubscriber(subscriber{g}) // subscriptions.go
	srv.SetRootsChanged(g.rootsChanged)      // roots.go
	srv.SetToolWait(g.awaitTool)             // lifecycle.go
	return g, nil
}

// registerFirst registers, in the order of the upstreams, what those
// ready at the end of Mount listed, refusing a collision or a tool filter
// that matches nothing (then nothing is registered); those ready later
// register themselves (refresh).
func (g *Gateway) registerFirst() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	var done []*mount
	for _, m := range g.mounts {
		cat := m.first
		m.first = nil
		if cat == nil {
			continue
		}
		err := m.filtersSomething(cat)
		if err == nil {
			err = cat.claim(g.owners, false)
		}
		if err == nil {
			err = cat.register(g.srv, nil)
		}
		if err != nil {
			for _, d := range done {
				d.cat.unregister(g.srv, nil)
			}
			return err
		}
		m.cat = cat
		m.findsSkills()
		done = append(done, m)
	}
	g.indexViews()     // views.go
	g.mounting = false // from now on, the upstreams ready register themselves
	return nil
}

// findsSkills sets the server's skill finder when the upstream serves
// skills, so that a skill it serves unlisted is served once a client
// names it (skills_found.go).
func (m *mount) findsSkills() {
	if s := m.catalog.live(); s != nil && declaresSkills(s) {
		m.g.srv.SetSkillFinder(m.g.findSkill)
	}
}

// checkUpstreams checks the upstreams' names and targets.
func checkUpstreams(ups []Upstream) error {
	if len(ups) == 0 {
		return errors.New("gateway: no upstream")
	}
	seen := map[string]bool{}
	for _, up := range ups {
		if up.Name == "" || !vocab.ValidToolName(up.Name+"_x") || slices.Contains([]byte(up.Name), '_') {
			return fmt.Errorf("gateway: upstream name %q: use letters, digits, '-' and '.'", up.Name)
		}
		if seen[up.Name] {
			return fmt.Errorf("gateway: upstream %s named twice", up.Name)
		}
		seen[up.Name] = true
		switch {
		case up.OpenAPI != nil && len(up.Command) > 0:
			return fmt.Errorf("gateway: upstream %s: an OpenAPI upstream has no Command", up.Name)
		case up.OpenAPI == nil && (len(up.Command) == 0) == (up.URL == ""):
			return fmt.Errorf("gateway: upstream %s: set exactly one of Command and URL", up.Name)
		}
		if _, err := parseToolFilter(up.Tools); err != nil {
			return fmt.Errorf("gateway: upstream %s: %w", up.Name, err)
		}
		if (up.URL != "" || up.OpenAPI != nil) && !reflect.DeepEqual(up.Sandbox, Sandbox{}) {
			return fmt.Errorf("gateway: upstream %s: a sandbox confines a stdio upstream's processes; an HTTP upstream runs elsewhere", up.Name)
		}
		if err := up.Sandbox.check(); err != nil { // sandbox.go
			return fmt.Errorf("gateway: upstream %s: %w", up.Name, err)
		}
	}
	return nil
}

// open starts the upstream and opens a session for l: the downstream
// session's, the catalog's, or a 2026-07-28 one, which fails with
// errNoEra when the upstream does not speak that version.
func (m *mount) open(ctx context.Context, l *link) (*conn, error) {
	up, ss := m.up, l.ss
	c := &conn{}
	var tc transport.Conn
	switch {
	case m.rest != nil:
		tc = m.rest.dial() // openapi.go
	case m.dial != nil:
		tc = m.dial()
	case up.URL != "":
		tc = streamable.Dial(streamable.ClientConfig{URL: up.URL, Header: up.Header, Credentials: l.credentials(), Client: m.client, MaxMessageBytes: up.MaxMessageBytes, Name: "upstream " + up.Name})
	default:
		p := l.given // a tool view's (views.go)
		l.given = nil
		if p == nil && ss != nil && !l.stateless {
			p = m.takeSpare() // spare.go
		}
		if p == nil {
			var err error
			if p, err = m.startProcess(); err != nil {
				m.g.obs.Started(up.Name, false)
				return nil, fmt.Errorf("gateway: %w", err)
			}
		}
		c.process, tc = p, p.Conn()
	}
	caps := capabilities(ss)
	if l.caps != nil {
		caps = l.caps // a tool view's (views.go)
	}
	onNotification := m.notified
	if l.caps != nil {
		onNotification = nil // a tool view's session only lists, once
	} else if ss != nil && !l.stateless {
		onNotification = func(n *transport.Request) { m.sessionNotified(ss, n) } // subscriptions.go: its own, told to it alone
	}
	cfg := upstream.Config{
		Name: up.Name, Logger: m.log, ClientName: "vigil-gateway",
		Capabilities:   caps,
		OnRequest:      askClient(ss),
		OneClient:      ss != nil, // its requests are its client's, whether or not a call runs
		OnNotification: onNotification,
	}
	if l.stateless {
		// Each request carries its caller's capabilities; nothing is asked
		// of the gateway but by input_required results. Its lists are
		// listed again when it says they changed: a stdio upstream's
		// process of its own may change what 2026-07-28 callers see.
		cfg.ProtocolVersion, cfg.OnRequest = protocol.Version20260728, nil
		cfg.Capabilities = json.RawMessage(`{"extensions":{"io.modelcontextprotocol/skills":{}}}`)
		cfg.OnNotification = m.eraNotified // subscriptions.go
	}
	s, err := upstream.Open(ctx, tc, cfg)
	if err != nil {
		if c.process != nil {
			_ = c.process.Close()
		}
		if l.stateless && notSpoken(err) {
			return nil, fmt.Errorf("gateway: %w: %w", errNoEra, err)
		}
		m.g.obs.Started(up.Name, false)
		return nil, fmt.Errorf("gateway: %w", err)
	}
	c.session = s
	if err := m.giveRoots(ctx, l, c); err != nil { // roots.go: before any call of its caller
		return nil, err
	}
	m.track(c, l.caps == nil) // a tool view's listing is not counted a start
	if l.stateless {
		// Its lists may change apart from the listing session's (a
		// process of its own; an HTTP upstream's 2026-07-28 callers): it
		// says so on a listen stream, the 2026-07-28 way, for as long as
		// the session lives; and the resources listen streams followed on
		// the session before are followed on this one (subscriptions.go).
		m.watchers.Go(func() { m.listenEra(s) })
		m.listenEraFor(s, nil)
		return c, nil
	}
	if l.caps != nil {
		return c, nil // it only lists
	}
	m.wantLogs(ctx, s)        // forward_more.go
	m.resubscribe(ctx, s, ss) // subscriptions.go: what its users subscribed to on the session before
	return c, nil
}

// startProcess spawns a process of the stdio upstream.
func (m *mount) startProcess() (*upstream.Process, error) {
	cfg := upstream.ProcessConfig{Name: m.up.Name, Argv: m.up.Command, Env: m.up.Env, Logger: m.log, KillGrace: m.stopGrace, MaxMessageBytes: m.up.MaxMessageBytes}
	if m.sandbox != nil { // sandbox.go
		cfg.Sandbox, cfg.Egress, cfg.StartTimeout = &m.sandbox.policy, m.sandbox.proxy(), m.startTimeout
	}
	return upstream.StartProcess(cfg)
}

// idleConnsPerUpstream is how many idle connections to an HTTP upstream
// are kept for the next requests: as many as calls usually in flight at
// once. Go's default keeps 2, and with more calls than that each request
// over it opened and closed a connection of its own.
const idleConnsPerUpstream = 128

// upstreamClient returns the HTTP client of an HTTP upstream's sessions:
// one connection pool for all of them, kept warm, plain HTTP sent on the
// caller's goroutine, and no redirect followed (one could take the
// upstream's credentials elsewhere): streamable.NewHTTPClient.
func upstreamClient() *http.Client {
	return streamable.NewHTTPClient(idleConnsPerUpstream)
}

// notified handles the listing session's notifications that belong to no
// call: a list that changed is listed again and what is registered
// follows it; a resource update reaches those it serves that subscribed.
// Any other (a log message or progress outside a call) is told to no
// caller, and counted as dropped (reason notification).
func (m *mount) notified(n *transport.Request) {
	switch n.Method {
	case "notifications/tools/list_changed", "notifications/prompts/list_changed", "notifications/resources/list_changed":
		select { // a burst of them costs one listing
		case m.stale <- struct{}{}:
		default:
		}
	case "notifications/resources/updated":
		if uri := updatedURI(n); uri != "" {
			m.sharedUpdated(uri) // subscriptions.go
		}
	default:
		m.unrouted()
	}
}

// unrouted counts a notification of no call that no caller is told.
func (m *mount) unrouted() { m.g.tally[m.up.Name].unrouted.Add(1) }

// relistEvery bounds how often an upstream is listed again after it said
// a list changed: a storm of list_changed costs one listing at once, then
// at most one per relistEvery while it lasts, and one after its last.
const relistEvery = time.Second

// refreshLoop, until Close, starts the catalog's session (at once, then
// again as soon as it goes, with backoff) and lists what the new one
// serves; lists the upstream again when it said a list changed (at most
// once per relistEvery); and closes the sessions of downstream sessions
// that are idle.
func (m *mount) refreshLoop() {
	var reap <-chan time.Time
	if m.idle > 0 {
		t := time.NewTicker(reapEvery(m.idle))
		defer t.Stop()
		reap = t.C
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	later := time.NewTimer(time.Hour) // the listing due after a list_changed too soon after the last
	later.Stop()
	defer later.Stop()
	var due <-chan time.Time // later's channel while a listing is due
	var relisted time.Time   // when the last listing after a list_changed began
	relist := func() {
		relisted = time.Now()
		m.relist()
	}
	listed := m.keepCatalog()
	for {
		var gone <-chan struct{}
		var retry <-chan time.Time
		if listed != nil {
			gone = listed.Done()
		} else {
			timer.Reset(max(m.catalog.retryIn(), minBackoff/10))
			retry = timer.C
		}
		select {
		case <-m.stale:
			switch wait := relistEvery - time.Since(relisted); {
			case due != nil: // the listing due will see this change too
			case wait > 0:
				later.Reset(wait)
				due = later.C
			default:
				relist()
			}
		case <-due:
			due = nil
			relist()
		case <-m.check:
			m.ping(listed)
		case <-gone:
			m.setState(StateStarting)
			listed = m.keepCatalog()
		case <-retry:
			listed = m.keepCatalog()
		case <-reap:
			m.reapIdle(m.now())
			m.reapSpare()
		case <-m.ctx.Done():
			return
		}
	}
}

// defaultStartTimeout is [Config].StartTimeout's default: room for a
// first start that fetches the upstream's package (npx -y on a machine
// that never ran it), which took up to a minute and a half where 30 s
// failed every start.
const defaultStartTimeout = 2 * time.Minute

// keepCatalog starts the catalog's session (not before its backoff),
// lists what it serves, registers it, and returns it: the upstream is
// ready. It returns nil, the upstream failing, when the session could not
// start or be listed within the start timeout.
func (m *mount) keepCatalog() *upstream.Session {
	defer m.settle()
	ctx, cancel := context.WithTimeoutCause(m.ctx, m.startTimeout, m.startTimeoutError())
	defer cancel()
	s, err := m.catalog.session(ctx)
	if err == nil {
		err = m.refresh(ctx, s)
		if err != nil && m.ctx.Err() == nil {
			m.log.Warn("upstream listing failed", "upstream", m.up.Name, "error", err)
			m.catalog.setback(s)
		}
	}
	switch {
	case m.ctx.Err() != nil:
		return nil
	case err != nil:
		m.setState(StateFailing)
		return nil
	}
	m.g.mu.Lock()
	m.g.instructed(m, s.Initialized().Instructions) // instructions.go
	m.g.mu.Unlock()
	m.listed.Store(true)
	m.setState(StateReady)
	m.refillSpare() // spare.go
	return s
}

// checkCatalog asks refreshLoop to check that the catalog's session is
// alive.
func (m *mount) checkCatalog() {
	select {
	case m.check <- struct{}{}:
	default:
	}
}

// pingWithin bounds a ping of the catalog's session.
const pingWithin = 10 * time.Second

// ping pings the catalog's session s (nil: it has gone, and is started
// again already): when it has gone, the session ends, and refreshLoop
// starts it again.
func (m *mount) ping(s *upstream.Session) {
	if s == nil {
		return
	}
	ctx, cancel := context.WithTimeout(m.ctx, pingWithin)
	defer cancel()
	_, _ = s.Call(ctx, "ping", nil, nil)
}

// relist lists the upstream again after a list_changed, within
// listWithin.
func (m *mount) relist() {
	s := m.catalog.live()
	if m.staleEra.Swap(false) && m.up.URL == "" {
		if e := m.era.live(); e != nil {
			s = e // its process changed its lists: a 2026-07-28 caller's call did (era2026.go)
		}
	}
	if s == nil {
		return // a session that expired is started again and listed by refreshLoop
	}
	ctx, cancel := context.WithTimeout(m.ctx, listWithin)
	defer cancel()
	if err := m.refresh(ctx, s); err != nil {
		m.log.Warn("gateway: listing again after list_changed failed", "upstream", m.up.Name, "error", err)
	}
}

// listWithin bounds the listing after a list_changed.
const listWithin = 30 * time.Second

// refresh lists the upstream on s and registers what it lists now,
// removing what it no longer does; a name another upstream serves is
// left to it. While Mount has not registered the upstreams ready at its
// end, the listing is left for it (first).
func (m *mount) refresh(ctx context.Context, s *upstream.Session) error {
	cat, err := m.list(ctx, s)
	if err != nil {
		return err
	}
	m.g.mu.Lock()
	defer m.g.mu.Unlock()
	if m.g.mounting {
		m.first = cat
		return nil
	}
	if m.cat == nil { // ready after Mount: its first registration
		if err := m.filtersSomething(cat); err != nil {
			m.log.Warn("gateway: "+err.Error(), "upstream", m.up.Name)
		}
		m.cat = &catalog{m: m}
		defer m.findsSkills()
	}
	m.cat.release(m.g.owners)
	_ = cat.claim(m.g.owners, true)
	m.cat.unregister(m.g.srv, cat)
	if err := cat.register(m.g.srv, m.cat); err != nil { // m.cat: what stays registered unchanged (catalog_diff.go)
		m.log.Warn("gateway: registering again after list_changed failed", "upstream", m.up.Name, "error", err)
		cat = &catalog{m: m}
	}
	m.views.forget(!slices.Equal(m.cat.names().tools, cat.names().tools)) // views.go: listed again when next asked for
	m.cat = cat
	m.g.indexViews()
	return nil
}

// askClient returns the OnRequest of an upstream session: it forwards a
// request of the upstream (sampling, elicitation, roots) to the
// downstream client whose call it belongs to, with that call's context,
// and returns the client's answer. On the upstream session of the
// downstream session ss, a request that belongs to no call in flight, or
// whose call ended before it was sent, is the client's all the same: it
// is sent on ss (asks.go). A request that belongs to no client, or that
// the client cannot answer, is refused.
func askClient(ss *server.Session) func(context.Context, *transport.Request) (json.RawMessage, error) {
	return func(ctx context.Context, req *transport.Request) (_ json.RawMessage, err error) {
		ctx, end := relaySpan(ctx, req)
		defer func() { end(err) }()
		switch req.Method {
		case "sampling/createMessage", "elicitation/create", "roots/list":
		default:
			return nil, &transport.Error{Code: int64(protocol.CodeMethodNotFound), Message: "method not found"}
		}
		if w := waitingFrom(ctx); w != nil {
			return w.ask(ctx, req) // rounds.go: a stateless caller's call, asked across its retry
		}
		if server.RequestFromContext(ctx) == nil {
			if ss != nil {
				return askSession(ctx, ss, req) // asks.go
			}
			return nil, &transport.Error{Code: int64(protocol.CodeInvalidRequest), Message: "the gateway has no client to ask " + req.Method +
				" of: this upstream session serves none (it is the gateway's own, for listing), and no client's call is in flight on it"}
		}
		if refusal := refuseStateless(ctx, req.Method); refusal != nil {
			return nil, refusal // rounds.go
		}
		var params any
		if req.Params != nil {
			params = req.Params
		}
		var result json.RawMessage
		err = server.CallClient(ctx, req.Method, params, &result)
		if ss != nil && errors.Is(err, transport.ErrStreamGone) {
			return askSession(ctx, ss, req) // the call's stream ended before the request was sent
		}
		return result, clientError(req.Method, err)
	}
}

// clientError is the upstream's answer of the client's failure to answer
// method: its JSON-RPC error as it was, or that it does not support
// method; nil for nil.
func clientError(method string, err error) error {
	var se *server.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &se):
		return &transport.Error{Code: int64(se.Code), Message: se.Message, Data: se.Data}
	case errors.Is(err, server.ErrCapability):
		return &transport.Error{Code: int64(protocol.CodeInvalidRequest), Message: "the gateway's client declared no " + capabilityOf[method] +
			" capability (nor did the gateway, for it, to this upstream), so it is not asked " + method}
	default:
		return err
	}
}

// Close closes the upstreams' sessions and ends their processes, all at
// once, waiting for them: a process that has not exited StopGrace after
// its input closed is killed. Calls forwarded afterwards fail. It is
// idempotent and returns nil.
func (g *Gateway) Close() error {
	g.srv.SetSkillFinder(nil)
	g.srv.SetResourceFallback(nil)
	g.srv.SetToolView(nil)
	g.srv.SetItemView(nil)
	g.srv.SetResourceSubscriber(nil)
	g.srv.SetRootsChanged(nil)
	g.srv.SetToolWait(nil)
	if g.searching {
		_ = g.srv.SetToolSearch(nil)
	}
	var mounts sync.WaitGroup
	for _, m := range g.mounts {
		mounts.Go(m.close)
	}
	mounts.Wait()
	g.watch.Wait()
	return nil
}

// close closes the mount's sessions and ends their processes, at once,
// waiting for them.
func (m *mount) close() {
	m.setState(StateStopped)
	m.stop() // every link's context ends: each downstream session's is closed by its watcher
	var links sync.WaitGroup
	links.Go(m.catalog.close)
	links.Go(m.era.close)
	m.mu.Lock()
	for key, l := range m.callers {
		delete(m.callers, key)
		links.Go(l.close)
	}
	m.mu.Unlock()
	m.waiting.closeAll()
	links.Wait()
	m.refresher.Wait() // a listing under way fails at once: its session is closed
	m.closeSpare()     // spare.go
	m.watchers.Wait()
	m.closing.Wait()
	if m.rest != nil {
		m.rest.close()
	}
	if m.client != nil {
		m.client.CloseIdleConnections()
	}
}
