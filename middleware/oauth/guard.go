package oauth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vigil-mcp/vigil/internal/jsonscan"
	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/middleware/auth"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// defaultMaxBodyBytes is how much of a POST body the guard reads, at most,
// to find the tool a tools/call names (Config.MaxBodyBytes).
const defaultMaxBodyBytes = 4 << 20

// retryAfterSeconds is the Retry-After of a 503 when the verifier cannot
// decide; retryBusySeconds, when it would not ask now (its budget of new
// tokens refills within a second).
const (
	retryAfterSeconds = "5"
	retryBusySeconds  = "1"
)

// Config configures a [ResourceServer].
type Config struct {
	// Resource is the canonical URI of the protected MCP endpoint, such as
	// https://mcp.example.com/mcp: the audience its tokens must name.
	// Required: an absolute http or https URI without a fragment.
	Resource string
	// AuthorizationServers are the issuer URLs of the authorization
	// servers that issue tokens for Resource. Required.
	AuthorizationServers []string
	// Verifier checks bearer tokens. Required.
	Verifier Verifier
	// Scopes are the scopes every request needs.
	Scopes []string
	// RequestScopes, when set, returns the scopes a request needs besides
	// Scopes, by what it asks for (the scopes of the gateway catalog's
	// endpoint it is sent to, which gateway's Gateway.EndpointScopes
	// returns): a principal that lacks one
	// is refused 403 insufficient_scope naming every scope the request
	// needs, as for Scopes, HideTools or not. It is called once per
	// request the guard sees and must be safe for concurrent use.
	RequestScopes func(r *http.Request) []string
	// Tools is the server whose tools' scopes ([server.Tool].Scopes) a
	// tools/call needs besides Scopes; nil: none. A request whose principal
	// holds every tool scope ([server.Server.AllToolScopes]) skips the
	// per-tool check and its body is not read.
	Tools *server.Server
	// ScopesSupported are the scopes the metadata advertises; nil: Scopes
	// and, when Tools is set and HideTools is not, the tool scopes known at
	// New.
	ScopesSupported []string
	// HideTools, for tool names that are secret, answers a tools/call of a
	// tool whose scopes the principal lacks exactly as a call of an unknown
	// tool: the guard refuses only a lack of Scopes and lets such a call on
	// to the server, whose tool access check must refuse it, as
	// server.WithToolAccess([auth.ToolAccess]) does (tools/list needs it anyway
	// to hide the names); a server without one would run the call. The
	// call is still counted as insufficient_scope. By default the guard
	// answers it 403 insufficient_scope naming the scopes it needs, the
	// step-up clients follow: tools/list filtering is then a convenience,
	// not secrecy.
	HideTools bool
	// ResourceName is the metadata's human-readable resource_name.
	ResourceName string
	// ResourceDocumentation is the metadata's resource_documentation URL.
	ResourceDocumentation string
	// MaxBodyBytes bounds the part of a POST body read to find the tools a
	// request calls; 0 means defaultMaxBodyBytes. A longer body that
	// must be read is refused with 413: keep it at least the transport's
	// own limit.
	MaxBodyBytes int64
	// DPoP, when set, also accepts DPoP-bound tokens (RFC 9449) under the
	// Authorization scheme DPoP with their proof, and advertises them in
	// the metadata and the challenges. Nil: only Bearer. A DPoP-bound
	// token (cnf.jkt) presented as Bearer is refused either way.
	DPoP *DPoPConfig
	// Registerer receives mcp_server_auth_failures_total; nil: no metric.
	Registerer prometheus.Registerer
	// Logger receives one record per refused request (info; debug for a
	// request without a token), never the token; nil: no logs.
	Logger *slog.Logger
}

// ResourceServer guards an MCP endpoint as an OAuth 2.1 resource server.
// It is safe for concurrent use.
type ResourceServer struct {
	cfg          Config
	metaURL      string
	metaPaths    []string
	metadata     http.Handler
	failures     *prometheus.CounterVec // nil: no metric
	logger       *slog.Logger
	maxBody      int64
	globalScopes []string
	// exchanging is set once the server has an Exchanger: Handler then
	// keeps each verified request's token in its context (heldToken).
	exchanging atomic.Bool
	dpop       *dpopChecker // nil: Bearer only
}

// New checks cfg and returns its resource server; it registers the failure
// counter with cfg.Registerer, with every reason at zero.
func New(cfg Config) (*ResourceServer, error) {
	u, err := url.Parse(cfg.Resource)
	switch {
	case cfg.Resource == "":
		return nil, errors.New("auth: Config.Resource is required")
	case err != nil:
		return nil, fmt.Errorf("auth: Config.Resource: %w", err)
	case u.Scheme != "https" && u.Scheme != "http" || u.Host == "":
		return nil, fmt.Errorf("auth: Config.Resource %q: must be an absolute http or https URI", cfg.Resource)
	case u.Fragment != "" || strings.Contains(cfg.Resource, "#"):
		return nil, fmt.Errorf("auth: Config.Resource %q: must not have a fragment", cfg.Resource)
	case len(cfg.AuthorizationServers) == 0:
		return nil, errors.New("auth: Config.AuthorizationServers is required")
	case cfg.Verifier == nil:
		return nil, errors.New("auth: Config.Verifier is required")
	}
	for _, as := range cfg.AuthorizationServers {
		if a, err := url.Parse(as); err != nil || a.Scheme == "" || a.Host == "" {
			return nil, fmt.Errorf("auth: authorization server %q: must be an absolute URL", as)
		}
	}
	for _, s := range cfg.Scopes {
		if !validScope(s) {
			return nil, fmt.Errorf("auth: invalid scope %q", s)
		}
	}
	rs := &ResourceServer{
		cfg:          cfg,
		metaURL:      metadataURL(u),
		metaPaths:    metadataPaths(u),
		logger:       cfg.Logger,
		maxBody:      cfg.MaxBodyBytes,
		globalScopes: slices.Clone(cfg.Scopes),
	}
	if rs.logger == nil {
		rs.logger = slog.New(slog.DiscardHandler)
	}
	if rs.maxBody <= 0 {
		rs.maxBody = defaultMaxBodyBytes
	}
	var dpopAlgs []string
	if cfg.DPoP != nil {
		if rs.dpop, err = newDPoPChecker(cfg.DPoP, cfg.Resource); err != nil {
			return nil, err
		}
		dpopAlgs = rs.dpop.algs
	}
	supported := cfg.ScopesSupported
	if supported == nil {
		supported = slices.Clone(cfg.Scopes)
		if cfg.Tools != nil && !cfg.HideTools {
			for _, s := range cfg.Tools.AllToolScopes() {
				if !slices.Contains(supported, s) {
					supported = append(supported, s)
				}
			}
		}
	}
	body, err := json.Marshal(protectedResourceMetadata{
		Resource:               cfg.Resource,
		AuthorizationServers:   cfg.AuthorizationServers,
		ScopesSupported:        supported,
		BearerMethodsSupported: []string{"header"},
		ResourceName:           cfg.ResourceName,
		ResourceDocumentation:  cfg.ResourceDocumentation,
		DPoPAlgorithms:         dpopAlgs,
		DPoPRequired:           cfg.DPoP != nil && cfg.DPoP.Required,
	})
	if err != nil {
		return nil, fmt.Errorf("auth: metadata: %w", err)
	}
	rs.metadata = metadataHandler{body: body}
	if cfg.Registerer != nil {
		rs.failures = prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: mcpconv.MetricAuthFailures,
			Help: "Requests the OAuth resource server refused, each counted once. reason: missing_token (401), " +
				"invalid_token (401, or 400 for a malformed request), expired, wrong_audience, wrong_issuer, unknown_key (401), " +
				"insufficient_scope (403; with HideTools, a tools/call answered as an unknown tool), session_principal_mismatch (404: a session id of another principal), " +
				"verifier_error (503: the verifier could not decide), " +
				"verifier_busy (503: too many new tokens to introspect, or DPoP proofs to remember; none sent to the authorization server), " +
				"invalid_dpop_proof (401: a DPoP proof missing, malformed, replayed, or not matching the request or the token), " +
				"use_dpop_nonce (401: a DPoP proof without the server's current nonce).",
		}, []string{"reason"})
		for _, r := range Reasons() {
			rs.failures.WithLabelValues(r.String())
		}
		if err := cfg.Registerer.Register(rs.failures); err != nil {
			return nil, fmt.Errorf("auth: register %s: %w", mcpconv.MetricAuthFailures, err)
		}
	}
	return rs, nil
}

// validScope reports whether s is an RFC 6749 scope-token.
func validScope(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// requestScopes returns the scopes r needs before its tools': Scopes and
// RequestScopes'.
func (rs *ResourceServer) requestScopes(r *http.Request) []string {
	if rs.cfg.RequestScopes == nil {
		return rs.globalScopes
	}
	extra := rs.cfg.RequestScopes(r)
	if len(extra) == 0 {
		return rs.globalScopes
	}
	base := slices.Clone(rs.globalScopes)
	for _, s := range extra {
		if !slices.Contains(base, s) {
			base = append(base, s)
		}
	}
	return base
}

// countFailure counts one refused request under reason.
func (rs *ResourceServer) countFailure(reason Reason) {
	if rs.failures != nil {
		rs.failures.WithLabelValues(reason.String()).Inc()
	}
}

// rejected counts the streamable transport's refusals that are
// authorization failures: a session id presented by another principal
// ([protocol.RejectSessionPrincipal]) as [ReasonSessionPrincipalMismatch].
// [ResourceServer.Endpoint] hands it to the Endpoint (streamable.WithRejectHook).
func (rs *ResourceServer) rejected(reason protocol.RejectReason) {
	if reason == protocol.RejectSessionPrincipal {
		rs.countFailure(ReasonSessionPrincipalMismatch)
	}
}

// MetadataHandlers returns, by the path to serve it at, the handler of
// the protected resource metadata (GET and HEAD): at
// /.well-known/oauth-protected-resource followed by the resource's path
// (the RFC 9728 form, named in challenges), and at
// /.well-known/oauth-protected-resource itself.
func (rs *ResourceServer) MetadataHandlers() map[string]http.Handler {
	m := make(map[string]http.Handler, len(rs.metaPaths))
	for _, p := range rs.metaPaths {
		m[p] = rs.metadata
	}
	return m
}

// MetadataURL returns the URL challenges name in resource_metadata.
func (rs *ResourceServer) MetadataURL() string { return rs.metaURL }

// Handler protects next, the MCP endpoint: it answers a request without a
// valid token or scope with 400, 401, 403, 413 or 503, as the package doc
// lists, and otherwise has next serve it with the principal in its context
// ([auth.PrincipalFromContext]). 400, 401 and 403 carry a WWW-Authenticate
// challenge naming the metadata; every refusal's body is a JSON-RPC error
// object with a null id (code -32600, or -32000 for 503). A POST whose
// principal lacks some tool scope has its body read for the tools it
// calls; [ResourceServer.Endpoint] spares that read.
func (rs *ResourceServer) Handler(next http.Handler) http.Handler { return rs.handler(next, false) }

// Endpoint returns the streamable Endpoint of srv made with opts and
// behind this guard, and the guarded handler to serve it with: Handler of
// the Endpoint, which checks the tools a 2025 POST calls on the message it
// decodes, with the same 403, instead of having Handler read the body. A
// request the Endpoint forwards to another replica carries an assertion
// of its principal, not its token, which the guard there authorizes,
// every scope checked. To put a handler between the guard and the
// Endpoint (a rate limit that needs the principal), serve
// Handler(that(endpoint)): the Endpoint still checks each message, and
// forwarded requests still pass the guard alone. Each session is bound to
// the principal that opened it (streamable.WithPrincipal with
// auth.SessionPrincipal, which opts may replace), and the Endpoint's
// refusals of a session presented by another principal are counted as
// [ReasonSessionPrincipalMismatch].
func (rs *ResourceServer) Endpoint(srv streamable.Server, opts ...streamable.Option) (*streamable.Endpoint, http.Handler) {
	all := make([]streamable.Option, 0, len(opts)+3)
	all = append(all, streamable.WithPrincipal(auth.SessionPrincipal))
	all = append(all, opts...)
	all = append(all, streamable.WithGuard(endpointGuard{rs}), streamable.WithRejectHook(rs.rejected))
	ep := streamable.New(srv, all...)
	return ep, rs.handler(ep, rs.cfg.Tools != nil)
}

// endpointGuard is what a ResourceServer hands the Endpoint it guards
// (streamable.WithGuard).
type endpointGuard struct{ rs *ResourceServer }

// Wrap is the guard of the requests other replicas forward.
func (g endpointGuard) Wrap(next http.Handler) http.Handler {
	return g.rs.handler(next, g.rs.cfg.Tools != nil)
}

// CheckMessage is guardMessage, with tool scopes to check.
func (g endpointGuard) CheckMessage(w http.ResponseWriter, r *http.Request, msg transport.Message) bool {
	return g.rs.cfg.Tools == nil || g.rs.guardMessage(w, r, msg)
}

// AssertPrincipal is assertPrincipal (forward.go).
func (g endpointGuard) AssertPrincipal(r *http.Request) []byte { return g.rs.assertPrincipal(r) }

// RestorePrincipal is restorePrincipal (forward.go).
func (g endpointGuard) RestorePrincipal(ctx context.Context, assertion []byte) context.Context {
	return g.rs.restorePrincipal(ctx, assertion)
}

// handler is Handler; endpointChecks says next is an Endpoint that checks
// each message's tools itself (guardMessage), so that the body is not read
// for them.
func (rs *ResourceServer) handler(next http.Handler, endpointChecks bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		base := rs.requestScopes(r)
		p, tok, err := rs.authenticate(r)
		if err != nil {
			rs.refuse(w, r, err, base)
			return
		}
		if rs.dpop != nil && rs.dpop.nonceKey != nil && usedDPoP(r) {
			// The current nonce on every answer (RFC 9449 §8.2), so that a
			// client moves on before the one it holds expires.
			w.Header().Set("DPoP-Nonce", rs.dpop.nonce(rs.dpop.now()))
		}
		if rs.cfg.HideTools {
			// The challenge names no tool scope, and no body is read for one.
			if missing := p.Missing(base); len(missing) > 0 {
				rs.refuse(w, r, &Error{Reason: ReasonInsufficientScope, Description: "missing scope: " + strings.Join(missing, " ")}, base)
				return
			}
		}
		// A principal that lacks a scope every request needs is refused
		// here, with every scope the request needs, its tools' too: the
		// body is read for them, as without the endpoint's check.
		needed, status := rs.needs(r, p, base, endpointChecks && p.HasScopes(base...))
		switch status {
		case http.StatusRequestEntityTooLarge:
			rs.logger.LogAttrs(r.Context(), slog.LevelInfo, "auth: body too large to check tool scopes", slog.Int64("max_body_bytes", rs.maxBody))
			streamable.WriteError(w, status, protocol.CodeInvalidRequest, "request body too large")
			return
		case http.StatusBadRequest:
			// Fail closed: a body that cannot be read cannot be checked.
			streamable.WriteError(w, status, protocol.CodeInvalidRequest, "request body could not be read")
			return
		}
		if missing := p.Missing(needed); len(missing) > 0 {
			if !rs.cfg.HideTools {
				rs.refuse(w, r, &Error{Reason: ReasonInsufficientScope, Description: "missing scope: " + strings.Join(missing, " ")}, needed)
				return
			}
			rs.hideTool(r, missing)
		}
		ctx := auth.ContextWithPrincipal(r.Context(), p)
		if tok != "" && rs.exchanging.Load() {
			ctx = context.WithValue(ctx, heldTokenKey{}, &heldToken{rs: rs, p: p, token: tok})
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// authenticate returns the principal of r's token, verified, and the
// token (a bearer token, or a DPoP-bound one under the DPoP scheme with
// its proof); for a request another replica forwarded, which carries no
// token, the principal its assertion names (see restorePrincipal), whose
// token that replica verified, and no token.
func (rs *ResourceServer) authenticate(r *http.Request) (*auth.Principal, string, error) {
	tok, isDPoP, err := bearerToken(r, rs.dpop != nil)
	switch {
	case isForm(r):
		// MCP messages are JSON: a form body is where RFC 6750 §2.2
		// would carry a token, which is accepted only in the header. It
		// is refused unread, so that it costs no memory.
		return nil, "", &Error{Reason: ReasonInvalidToken, Description: "form-encoded bodies are refused: access tokens are accepted only in the Authorization header", Err: errInvalidRequest}
	case err == nil:
	case reasonOf(err) == ReasonMissingToken:
		if a, ok := assertedFrom(r.Context()); ok {
			return a.p, "", a.err
		}
		return nil, "", err
	default:
		return nil, "", err
	}
	if isDPoP {
		p, err := rs.authenticateDPoP(r, tok)
		return p, tok, err
	}
	if rs.dpop != nil && rs.dpop.required {
		return nil, "", &Error{Reason: ReasonInvalidToken, Description: "DPoP is required: present a DPoP-bound token with the DPoP scheme and a proof"}
	}
	p, err := rs.cfg.Verifier.Verify(r.Context(), tok)
	switch {
	case err != nil:
		return nil, "", err
	case p == nil:
		return nil, "", &Error{Reason: ReasonVerifierError, Description: "verifier returned no principal"}
	case p.KeyThumbprint != "":
		// RFC 9449 §7.2: whoever holds a bound token must not get past
		// its binding by calling it a bearer token.
		return nil, "", &Error{Reason: ReasonInvalidToken, Description: "the token is DPoP-bound: present it with the DPoP scheme and a proof signed by its key"}
	}
	return p, tok, nil
}

// authenticateDPoP returns the principal of a DPoP-bound token tok, which
// r presents under the DPoP scheme: its proof is checked first, alone,
// then the token, then the proof against the token, and last its jti is
// recorded, so that only a proof that passed everything uses up its jti.
func (rs *ResourceServer) authenticateDPoP(r *http.Request, tok string) (*auth.Principal, error) {
	pf, err := rs.dpop.check(r)
	if err != nil {
		return nil, err
	}
	p, err := rs.cfg.Verifier.Verify(r.Context(), tok)
	switch {
	case err != nil:
		return nil, err
	case p == nil:
		return nil, &Error{Reason: ReasonVerifierError, Description: "verifier returned no principal"}
	}
	if err := rs.dpop.bind(r.Context(), pf, tok, p); err != nil {
		return nil, err
	}
	return p, nil
}

// needs returns every scope r needs: base (requestScopes), and for a POST whose
// principal lacks some tool scope, the scopes of the tools it calls (read
// from the body, which is put back, unless the endpoint checks them:
// endpointChecks). A status other than 0 refuses r: 413 for a body too
// large to read, 400 for one that could not be read.
func (rs *ResourceServer) needs(r *http.Request, p *auth.Principal, base []string, endpointChecks bool) ([]string, int) {
	needed := base
	if rs.cfg.Tools == nil || r.Method != http.MethodPost {
		return needed, 0
	}
	if p.HasScopes(rs.cfg.Tools.AllToolScopes()...) {
		return needed, 0 // fully scoped: the body is not read
	}
	if r.Header.Get("Mcp-Protocol-Version") == protocol.Version20260728 {
		// A 2026-07-28 request names its method and tool in headers, which
		// the transport refuses (400) unless they match the body: a request
		// whose headers lie runs nothing, so they are read, not the body.
		if strings.TrimSpace(r.Header.Get("Mcp-Method")) != "tools/call" {
			return needed, 0
		}
		return rs.withToolScopes(needed, strings.TrimSpace(r.Header.Get("Mcp-Name"))), 0
	}
	if endpointChecks {
		return needed, 0 // guardMessage checks the message the endpoint decodes
	}
	body, over, err := readBody(r, rs.maxBody)
	switch {
	case over:
		return nil, http.StatusRequestEntityTooLarge
	case err != nil:
		return nil, http.StatusBadRequest
	}
	for _, name := range calledTools(body) {
		needed = rs.withToolScopes(needed, name)
	}
	return needed, 0
}

// guardMessage checks each message an Endpoint behind the guard decodes: it
// refuses a 2025 tools/call whose principal lacks a scope of its tool with
// the 403 Handler answers, or with Config.HideTools counts it and lets it
// on (a 2026-07-28 request's tool was checked by its Mcp-Name header,
// which the Endpoint holds to the body). A message with no principal in
// its context did not pass Handler: it is refused.
func (rs *ResourceServer) guardMessage(w http.ResponseWriter, r *http.Request, msg transport.Message) bool {
	if r.Header.Get("Mcp-Protocol-Version") == protocol.Version20260728 {
		return true
	}
	var tools []string
	switch m := msg.(type) {
	case *transport.Request:
		if name, ok := toolOf(m); ok {
			tools = append(tools, name)
		}
	case transport.Batch: // refused by the Endpoint next, but not before a 403 it earns
		if rs.cfg.HideTools {
			return true // as a batch of unknown tools is: the refusal is the Endpoint's
		}
		for _, raw := range m {
			if name, ok := calledTool(raw); ok {
				tools = append(tools, name)
			}
		}
	}
	if len(tools) == 0 {
		return true
	}
	p, ok := auth.PrincipalFromContext(r.Context())
	if !ok {
		rs.refuse(w, r, &Error{Reason: ReasonMissingToken}, nil)
		return false
	}
	needed := rs.globalScopes
	for _, name := range tools {
		needed = rs.withToolScopes(needed, name)
	}
	if missing := p.Missing(needed); len(missing) > 0 {
		if rs.cfg.HideTools {
			rs.hideTool(r, missing)
			return true
		}
		rs.refuse(w, r, &Error{Reason: ReasonInsufficientScope, Description: "missing scope: " + strings.Join(missing, " ")}, needed)
		return false
	}
	return true
}

// hideTool counts a request that calls a tool whose scopes its principal
// lacks, which Config.HideTools lets on to the server to be answered as a
// call of an unknown tool (auth.ToolAccess refuses it there).
func (rs *ResourceServer) hideTool(r *http.Request, missing []string) {
	rs.countFailure(ReasonInsufficientScope)
	rs.logger.LogAttrs(r.Context(), slog.LevelDebug, "auth: tool hidden: answered as an unknown tool",
		slog.String("reason", ReasonInsufficientScope.String()), slog.String("missing", strings.Join(missing, " ")))
}

// toolOf returns the tool a tools/call request names.
func toolOf(req *transport.Request) (string, bool) {
	if req.Method != "tools/call" {
		return "", false
	}
	return paramsTool(req.Params)
}

// paramsTool returns the tool that params, a tools/call's valid JSON
// params, names.
func paramsTool(params []byte) (string, bool) {
	var name [1][]byte
	if !jsonscan.SplitObjectInto(name[:], params, "name") {
		return "", false
	}
	tool, ok := jsonscan.DecodeString(name[0])
	return tool, ok && tool != ""
}

// withToolScopes returns needed with the scopes of the tool name added.
func (rs *ResourceServer) withToolScopes(needed []string, name string) []string {
	t, _ := rs.cfg.Tools.Tool(name)
	for _, s := range t.Scopes {
		if !slices.Contains(needed, s) {
			needed = append(slices.Clip(needed), s)
		}
	}
	return needed
}

// calledTools returns the tool names of the tools/call requests in body, a
// JSON-RPC message or batch; nil when it is not valid JSON (the transport
// answers that). A message is checked and read as the transport checks
// and reads it (its validator and member splitter),
// which allocates nothing: only its method and params.name are looked at.
func calledTools(body []byte) []string {
	if !jsonscan.Valid(body) {
		return nil
	}
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var msgs []json.RawMessage
		if json.Unmarshal(trimmed, &msgs) != nil {
			return nil
		}
		var names []string
		for _, m := range msgs {
			if name, ok := calledTool(m); ok {
				names = append(names, name)
			}
		}
		return names
	}
	if name, ok := calledTool(trimmed); ok {
		return []string{name}
	}
	return nil
}

// calledTool returns the tool a tools/call message names; msg is valid
// JSON.
func calledTool(msg []byte) (string, bool) {
	var members [2][]byte
	if !jsonscan.SplitObjectInto(members[:], msg, "method", "params") {
		return "", false
	}
	if method, ok := jsonscan.DecodeString(members[0]); !ok || method != "tools/call" {
		return "", false
	}
	return paramsTool(members[1])
}

// refuse answers a refused request, counts it once and logs its reason.
func (rs *ResourceServer) refuse(w http.ResponseWriter, r *http.Request, err error, needed []string) {
	reason := reasonOf(err)
	desc := reason.String()
	if e, ok := errors.AsType[*Error](err); ok && e.Description != "" {
		desc = e.Description
	}
	ch := challenge{ResourceMetadata: rs.metaURL}
	// The DPoP challenge carries the error of a request that presented
	// DPoP, or of any when Bearer is not accepted; else it stands beside
	// Bearer's, saying DPoP is accepted.
	dpopErr := rs.dpop != nil && (rs.dpop.required || usedDPoP(r) || reason == ReasonInvalidDPoPProof || reason == ReasonUseDPoPNonce)
	status := http.StatusUnauthorized
	code := protocol.CodeInvalidRequest
	switch {
	case errors.Is(err, errInvalidRequest):
		// RFC 6750's error code is the same word as the transport's reject
		// label, which the module writes once, in package protocol.
		status, ch.Error, ch.Description = http.StatusBadRequest, protocol.RejectInvalidRequest.String(), desc
	case reason == ReasonMissingToken:
		ch.Scopes = needed
		if needed == nil {
			ch.Scopes = rs.globalScopes
		}
		desc = "missing bearer token"
	case reason == ReasonInsufficientScope:
		status, ch.Error, ch.Scopes, ch.Description = http.StatusForbidden, "insufficient_scope", needed, desc
	case reason == ReasonVerifierError:
		status, code, desc = http.StatusServiceUnavailable, protocol.CodeServerBusy, "cannot verify the token now: try again later"
	case reason == ReasonVerifierBusy:
		// Not 401: the token may be fine, and a client told so would fetch
		// a new one, adding to the load. Not 429: the budget is everyone's.
		status, code = http.StatusServiceUnavailable, protocol.CodeServerBusy
	case reason == ReasonInvalidDPoPProof:
		ch.Error, ch.Description = "invalid_dpop_proof", desc
	case reason == ReasonUseDPoPNonce:
		ch.Error, ch.Description = "use_dpop_nonce", desc
		w.Header().Set("DPoP-Nonce", rs.dpop.nonce(rs.dpop.now()))
	default:
		ch.Error, ch.Description = "invalid_token", desc
	}
	rs.countFailure(reason)
	// Refusals a client causes are counted above and logged at Debug: at
	// Info a flood of bad tokens would push the request lines out. A
	// verifier error, the server's own trouble, stays at Info.
	level := slog.LevelDebug
	if reason == ReasonVerifierError {
		level = slog.LevelInfo
	}
	attrs := []slog.Attr{slog.String("reason", reason.String()), slog.Int("status", status), slog.String("description", desc)}
	if reason == ReasonVerifierError && err != nil {
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	rs.logger.LogAttrs(r.Context(), level, "auth: request refused", attrs...)
	if status == http.StatusServiceUnavailable {
		retry := retryAfterSeconds
		if reason == ReasonVerifierBusy {
			retry = retryBusySeconds
		}
		w.Header().Set("Retry-After", retry)
	} else {
		rs.challenge(w, ch, dpopErr)
	}
	streamable.WriteError(w, status, code, sanitizeDescription(desc))
}

// challenge sets the WWW-Authenticate headers of a refusal: ch under the
// Bearer scheme, and with DPoP accepted a DPoP challenge naming its
// algorithms beside it; ch's error goes to the DPoP one when dpopErr, and
// the Bearer one is left out when DPoP is required.
func (rs *ResourceServer) challenge(w http.ResponseWriter, ch challenge, dpopErr bool) {
	if rs.dpop == nil {
		w.Header().Set("WWW-Authenticate", ch.String())
		return
	}
	d := ch
	d.Scheme, d.Algs = "DPoP", rs.dpop.algsAttr
	if dpopErr {
		ch.Error, ch.Description = "", ""
	} else {
		d.Error, d.Description = "", ""
	}
	if !rs.dpop.required {
		w.Header().Add("WWW-Authenticate", ch.String())
	}
	w.Header().Add("WWW-Authenticate", d.String())
}

// usedDPoP reports whether r's Authorization header names the DPoP scheme.
func usedDPoP(r *http.Request) bool {
	v := r.Header.Get("Authorization")
	return len(v) > len("DPoP ") && strings.EqualFold(v[:len("DPoP ")], "DPoP ")
}
