package server

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vigil-mcp/vigil/internal/vocab"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// Client logging: handlers log through [ClientLogger], and the records at or above
// the level the client asked for travel to it as notifications/message. In
// a 2025 session the client sets that level for the session with
// logging/setLevel; a 2026-07-28 request names it in its
// _meta["io.modelcontextprotocol/logLevel"], and without that key nothing is
// sent for the request.

// The slog levels of the RFC 5424 severities that slog does not name. The
// named ones map as Debug → "debug", Info → "info", Warn → "warning" and
// Error → "error"; a level between two of these maps to the lower one.
const (
	LevelNotice    = slog.Level(2)  // "notice": between Info and Warn
	LevelCritical  = slog.Level(12) // "critical"
	LevelAlert     = slog.Level(16) // "alert"
	LevelEmergency = slog.Level(20) // "emergency"
)

// LoggerKey is the attribute key that names the logger: a string attribute
// with this key, outside any group, becomes the notification's "logger"
// field instead of part of its data. For example
// ClientLogger(ctx).With(LoggerKey, "db").
const LoggerKey = "logger"

// logSeverity is an RFC 5424 severity, ordered from debug (0) to emergency.
type logSeverity int

const (
	sevDebug logSeverity = iota
	sevInfo
	sevNotice
	sevWarning
	sevError
	sevCritical
	sevAlert
	sevEmergency
	sevOff // above every severity: nothing is sent
)

// String returns the severity's name on the wire.
func (s logSeverity) String() string {
	switch s {
	case sevDebug:
		return "debug"
	case sevInfo:
		return "info"
	case sevNotice:
		return "notice"
	case sevWarning:
		return "warning"
	case sevError:
		return "error"
	case sevCritical:
		return "critical"
	case sevAlert:
		return "alert"
	case sevEmergency:
		return "emergency"
	}
	return "off"
}

// parseLogLevel reads a LoggingLevel name.
func parseLogLevel(name string) (logSeverity, bool) {
	for s := sevDebug; s <= sevEmergency; s++ {
		if s.String() == name {
			return s, true
		}
	}
	return sevOff, false
}

// severityOf maps a slog level to the severity of its records.
func severityOf(l slog.Level) logSeverity {
	switch {
	case l < slog.LevelInfo:
		return sevDebug
	case l < LevelNotice:
		return sevInfo
	case l < slog.LevelWarn:
		return sevNotice
	case l < slog.LevelError:
		return sevWarning
	case l < LevelCritical:
		return sevError
	case l < LevelAlert:
		return sevCritical
	case l < LevelEmergency:
		return sevAlert
	}
	return sevEmergency
}

// notifyConfig configures the notifications handlers send the client: log
// messages and progress.
type notifyConfig struct {
	logLevel         logSeverity   // before logging/setLevel
	logRate          float64       // notifications/message per second and session; <= 0: no limit
	logBurst         int           // the rate limit's burst
	progressInterval time.Duration // the least time between two progress notifications of a request
}

func defaultNotifyConfig() notifyConfig {
	return notifyConfig{logLevel: sevInfo, logRate: 100, logBurst: 200, progressInterval: 10 * time.Millisecond}
}

// sessionLogging is a session's client-logging state. The zero value is
// ready: no level set, and a full rate limiter.
type sessionLogging struct {
	mu       sync.Mutex
	set      bool        // logging/setLevel was received
	level    logSeverity // the level it set
	dropping bool        // the current drop streak was logged
	limit    tokenBucket // the rate limit of the server's configuration

	dropped atomic.Int64
}

// LogNotificationsDropped returns how many [ClientLogger] records the session's
// log rate limit dropped (see [WithClientLogRate]). It is safe for
// concurrent use.
func (ss *Session) LogNotificationsDropped() int64 { return ss.logging.dropped.Load() }

// threshold returns the session's level: the one it set, else the default.
func (l *sessionLogging) threshold(def logSeverity) logSeverity {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.set {
		return l.level
	}
	return def
}

func (l *sessionLogging) setLevel(s logSeverity) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.set, l.level = true, s
}

// allow applies the rate limit to one record. A refused record is counted;
// the first of a streak is logged at debug level on the server's logger.
func (ss *Session) allowLog(cfg *notifyConfig) bool {
	l := &ss.logging
	now := time.Now()
	l.mu.Lock()
	ok := l.limit.allow(now, cfg.logRate, cfg.logBurst)
	first := !ok && !l.dropping
	l.dropping = !ok
	l.mu.Unlock()
	if !ok {
		n := l.dropped.Add(1)
		if first {
			ss.debug("client log notifications over the rate limit: dropping", "dropped_total", n)
		}
	}
	return ok
}

// registerLogging registers logging/setLevel.
func (s *Server) registerLogging() {
	s.handle("logging/setLevel", s.setLogLevel)
}

// setLogLevel answers logging/setLevel with exactly {}.
func (s *Server) setLogLevel(_ context.Context, req *Request) (any, error) {
	if perRequestLogLevel(req) {
		return nil, Errorf(protocol.CodeMethodNotFound, "method not found: logging/setLevel is not part of protocol version %s", req.Protocol)
	}
	var p struct {
		Level *string `json:"level"`
	}
	if err := json.Unmarshal(req.Params, &p); err != nil || p.Level == nil {
		return nil, Errorf(protocol.CodeInvalidParams, "invalid logging/setLevel params: level is required")
	}
	sev, ok := parseLogLevel(*p.Level)
	if !ok {
		return nil, Errorf(protocol.CodeInvalidParams, "invalid log level %q: want debug, info, notice, warning, error, critical, alert or emergency",
			truncateUTF8(*p.Level, len("emergency")+1))
	}
	req.Session.logging.setLevel(sev)
	req.Session.storeShared(req.ArrivalContext())
	return struct{}{}, nil
}

// perRequestLogLevel reports whether req names its own log level in _meta
// (2026-07-28 and later; versions are dates and compare as strings).
func perRequestLogLevel(req *Request) bool { return req.Protocol >= protocol.Version20260728 }

// metaLogLevel reads req's _meta log level: sevOff when absent; ok is false
// when present but not a LoggingLevel.
func metaLogLevel(req *Request) (sev logSeverity, ok bool) {
	raw, present := req.Meta.Get(vocab.MetaLogLevel)
	if !present {
		return sevOff, true
	}
	var name string
	if json.Unmarshal(raw, &name) != nil {
		return sevOff, false
	}
	return parseLogLevel(name)
}

// checkLogLevelMeta refuses a request whose _meta log level is not a
// LoggingLevel, with protocol.CodeInvalidParams.
func checkLogLevelMeta(req *Request) error {
	if !perRequestLogLevel(req) {
		return nil
	}
	if _, ok := metaLogLevel(req); !ok {
		return Errorf(protocol.CodeInvalidParams, "invalid _meta %q: want debug, info, notice, warning, error, critical, alert or emergency", vocab.MetaLogLevel)
	}
	return nil
}

// ClientLogger returns a logger whose records reach the client of the request
// that ctx (a handler's context) belongs to, as notifications/message
// related to that request, when they are at or above the client's level.
// The notification's data is a JSON object: "message" and the record's
// attributes, groups nested; errors appear as their text, and values that
// do not encode as JSON as their fmt text. Do not log secrets or personal
// data: the client shows these messages.
//
// Records are sent synchronously, so one goroutine's records arrive in
// order and before the response; a send waits for the transport at most as
// long as the server's write timeout (see [WithWriteTimeout]). Records over
// the session's rate limit ([WithClientLogRate]) are dropped. Once the
// request is over (answered, cancelled) or the session has ended, logging is
// a silent no-op. With a context that carries no request, ClientLogger returns a
// logger that discards everything. The logger is safe for concurrent use.
func ClientLogger(ctx context.Context) *slog.Logger {
	req := RequestFromContext(ctx)
	if req == nil || req.Session == nil {
		return slog.New(slog.DiscardHandler)
	}
	h := &clientLogHandler{srv: req.Session.srv, ctx: ctx, req: req}
	if perRequestLogLevel(req) {
		h.fixed = true
		h.level, _ = metaLogLevel(req) // an invalid level was refused before the handler ran
	}
	return slog.New(h)
}

// clientLogHandler is the slog.Handler behind Logger.
type clientLogHandler struct {
	srv   *Server
	ctx   context.Context // the handler's context: done once the request is over
	req   *Request
	fixed bool        // the level is the request's own (2026-07-28)
	level logSeverity // that level
	name  string      // the "logger" field
	goas  []groupOrAttrs
}

// groupOrAttrs is one WithGroup (group != "") or WithAttrs call.
type groupOrAttrs struct {
	group string
	attrs []slog.Attr
}

func (h *clientLogHandler) threshold() logSeverity {
	if h.fixed {
		return h.level
	}
	return h.req.Session.logging.threshold(h.srv.cfg.notify.logLevel)
}

// Enabled reports whether a record at level would be sent now.
func (h *clientLogHandler) Enabled(_ context.Context, level slog.Level) bool {
	return severityOf(level) >= h.threshold() && h.ctx.Err() == nil
}

// Handle sends r to the client, unless the request is over, the client does
// not want its level, or the rate limit refuses it. It never fails: a
// notification that cannot be written is lost, as after the session ended.
func (h *clientLogHandler) Handle(_ context.Context, r slog.Record) error {
	sev := severityOf(r.Level)
	if sev < h.threshold() || h.ctx.Err() != nil {
		return nil
	}
	ss := h.req.Session
	if !ss.allowLog(&h.srv.cfg.notify) {
		return nil
	}
	data, name := h.data(r)
	params := struct {
		Level  string   `json:"level"`
		Logger string   `json:"logger,omitempty"`
		Data   logGroup `json:"data"`
	}{sev.String(), name, data}
	_ = ss.Notify(h.ctx, "notifications/message", params)
	return nil
}

// WithAttrs returns a handler that adds attrs to every record.
func (h *clientLogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	h2 := *h
	var kept []slog.Attr
	for _, a := range attrs {
		if name, ok := loggerName(a); ok && !h.inGroup() {
			h2.name = name
			continue
		}
		kept = append(kept, a)
	}
	h2.goas = append(slices.Clip(h.goas), groupOrAttrs{attrs: kept})
	return &h2
}

// WithGroup returns a handler that nests later attributes under name.
func (h *clientLogHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	h2 := *h
	h2.goas = append(slices.Clip(h.goas), groupOrAttrs{group: name})
	return &h2
}

func (h *clientLogHandler) inGroup() bool {
	for _, g := range h.goas {
		if g.group != "" {
			return true
		}
	}
	return false
}

// loggerName reads a LoggerKey attribute.
func loggerName(a slog.Attr) (string, bool) {
	if a.Key != LoggerKey {
		return "", false
	}
	v := a.Value.Resolve()
	if v.Kind() != slog.KindString {
		return "", false
	}
	return v.String(), true
}

// logGroup is the JSON object of a group of attributes.
type logGroup map[string]any

// data builds the notification's data from the handler's attributes and
// r's, and returns the logger name.
func (h *clientLogHandler) data(r slog.Record) (logGroup, string) {
	root := logGroup{}
	cur, name := root, h.name
	for _, g := range h.goas {
		if g.group != "" {
			sub := logGroup{}
			cur[g.group] = sub
			cur = sub
			continue
		}
		for _, a := range g.attrs {
			addAttr(cur, a)
		}
	}
	grouped := h.inGroup()
	r.Attrs(func(a slog.Attr) bool {
		if n, ok := loggerName(a); ok && !grouped {
			name = n
			return true
		}
		addAttr(cur, a)
		return true
	})
	prune(root)
	root["message"] = r.Message
	return root, name
}

// addAttr adds a to g, following slog's rules: empty attributes and empty
// groups are left out, and a group with an empty key is inlined.
func addAttr(g logGroup, a slog.Attr) {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return
	}
	if a.Value.Kind() != slog.KindGroup {
		g[a.Key] = logValue(a.Value)
		return
	}
	attrs := a.Value.Group()
	if len(attrs) == 0 {
		return
	}
	if a.Key == "" {
		for _, x := range attrs {
			addAttr(g, x)
		}
		return
	}
	sub, ok := g[a.Key].(logGroup)
	if !ok {
		sub = logGroup{}
		g[a.Key] = sub
	}
	for _, x := range attrs {
		addAttr(sub, x)
	}
}

// prune removes the groups that ended up empty (a WithGroup with no
// attributes after it), innermost first.
func prune(g logGroup) {
	for k, v := range g {
		if sub, ok := v.(logGroup); ok {
			prune(sub)
			if len(sub) == 0 {
				delete(g, k)
			}
		}
	}
}

// logValue turns a resolved, non-group value into something that encodes as
// JSON.
func logValue(v slog.Value) any {
	switch v.Kind() {
	case slog.KindString:
		return v.String()
	case slog.KindInt64:
		return v.Int64()
	case slog.KindUint64:
		return v.Uint64()
	case slog.KindFloat64:
		f := v.Float64()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return strconv.FormatFloat(f, 'g', -1, 64)
		}
		return f
	case slog.KindBool:
		return v.Bool()
	case slog.KindDuration:
		return v.Duration().String()
	case slog.KindTime:
		return v.Time().Format(time.RFC3339Nano)
	}
	x := v.Any()
	if err, ok := x.(error); ok {
		return err.Error()
	}
	raw, err := json.Marshal(x)
	if err != nil {
		return fmt.Sprint(x)
	}
	return json.RawMessage(raw)
}
