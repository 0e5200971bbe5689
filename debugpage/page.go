package debugpage

import (
	"cmp"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/vigil-mcp/vigil/internal/release"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/telemetry"
)

// debugPage is the live page of one server: the page, its trace views,
// stylesheet and icon (Handler). It is safe for concurrent use.
type debugPage struct {
	srv *server.Server
	rec *Recorder
	cfg handlerConfig
}

// debugSnapshot is what the page shows, and its JSON form.
type debugSnapshot struct {
	Now           time.Time      `json:"now"`
	Service       string         `json:"service"`       // the service's name (WithService)
	Version       string         `json:"version"`       // the service's version (WithService)
	VigilVersion  string         `json:"vigil_version"` // Vigil's, which serves it
	UptimeMS      float64        `json:"uptime_ms"`
	Ready         bool           `json:"ready"`
	Status        []string       `json:"status,omitempty"` // WithStatus's lines
	Exporter      string         `json:"trace_exporter"`
	Filter        debugFilter    `json:"filter"`
	Stats         []keyRow       `json:"stats"`     // per method/tool, in the order of Filter.Sort
	Attention     []attention    `json:"attention"` // errors, cancellations, drops and slow traces, newest first
	Sessions      []debugSession `json:"sessions"`
	InFlight      []debugRequest `json:"in_flight"`
	Cancellations []cancelEvent  `json:"cancellations"`
	Drops         []dropEvent    `json:"dropped_responses"`
	EndedSessions []endedSession `json:"ended_sessions"`
	TraceSummary  []traceGroup   `json:"trace_summary"` // the kept traces, by method/tool
	Traces        []traceView    `json:"traces"`        // the kept traces, newest first (JSON only)
	TracesKept    bool           `json:"traces_kept"`   // false when spans go elsewhere
	// TracesKeptCount is how many kept traces this view lists.
	TracesKeptCount int          `json:"traces_kept_count"`
	Memory          debugMemory  `json:"memory"`
	Series          []secondStat `json:"series,omitempty"` // the last 10 minutes, second by second (with ?series=1)
}

// debugFilter is what a view is narrowed to, from its URL.
type debugFilter struct {
	Session string `json:"session,omitempty"`
	Key     string `json:"key,omitempty"`     // "tools/call echo", "initialize", ...
	Outcome string `json:"outcome,omitempty"` // error, cancelled, dropped or slow
	Sort    string `json:"sort"`              // a column of the table
}

// debugOutcomes are the values of ?outcome=.
var debugOutcomes = []string{"error", "cancelled", "dropped", "slow"}

// debugSorts are the columns of ?sort=; all but key sort the largest first.
var debugSorts = []string{"key", "rate", "p50", "p95", "p99", "errors", "cancelled", "dropped", "total"}

func filterOf(q url.Values) debugFilter {
	f := debugFilter{Session: q.Get("session"), Key: q.Get("key"), Outcome: q.Get("outcome"), Sort: q.Get("sort")}
	if !slices.Contains(debugOutcomes, f.Outcome) {
		f.Outcome = ""
	}
	if !slices.Contains(debugSorts, f.Sort) {
		f.Sort = "key"
	}
	return f
}

// debugSession is a live session.
type debugSession struct {
	ID        string    `json:"id"`
	Transport string    `json:"transport"`
	Protocol  string    `json:"protocol_version"` // "" until initialize, and for a stateless request
	Era       string    `json:"era"`              // "2025 session" or "2026 stateless"
	Client    string    `json:"client,omitempty"` // clientInfo name and version
	Started   time.Time `json:"started"`
	AgeMS     float64   `json:"age_ms"`
	InFlight  int       `json:"in_flight"`

	principalView // who opened it (subject, client_id), with -auth-issuer
}

// debugRequest is a request in flight, in either direction.
type debugRequest struct {
	SessionID string    `json:"session_id"`
	Direction string    `json:"direction"` // "incoming" (a handler runs) or "outgoing" (waiting for the client)
	ID        string    `json:"id"`
	Method    string    `json:"method"`
	Name      string    `json:"name,omitempty"`
	Key       string    `json:"key"`
	Started   time.Time `json:"started"`
	AgeMS     float64   `json:"age_ms"`

	principalView // its session's (subject, client_id), with -auth-issuer
}

// servePage serves the page, or its JSON form, mounted at base.
func (p *debugPage) servePage(w http.ResponseWriter, r *http.Request, base string) {
	q := r.URL.Query()
	now := time.Now()
	asJSON := q.Get("format") == "json"
	snap := p.snapshot(now, base, filterOf(q), asJSON)
	stats := p.rec.events.stats
	setDebugHeaders(w)
	if asJSON {
		if q.Get("series") == "1" {
			snap.Series = stats.series(now)
		}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(snap)
		return
	}
	refresh := 2
	if v, err := strconv.Atoi(q.Get("refresh")); err == nil && v >= 0 {
		refresh = min(v, 3600)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = writePage(w, debugView{
		debugSnapshot: snap, Refresh: refresh, Base: base, MetricsURL: p.cfg.metricsURL,
		Query: pageQuery{base: base, values: q}, Charts: chartsOf(stats.series(now)),
	})
}

// snapshot gathers what the page mounted at base shows, as of now,
// narrowed by f; with withTraces (the JSON form), the kept traces in full
// too.
func (p *debugPage) snapshot(now time.Time, base string, f debugFilter, withTraces bool) debugSnapshot {
	ring := p.rec.traceRing()
	events := p.rec.events
	snap := debugSnapshot{
		Now:          now,
		Service:      cmp.Or(p.cfg.name, "MCP server"),
		Version:      p.cfg.version,
		VigilVersion: release.Version,
		UptimeMS:     millis(now.Sub(p.rec.started)),
		Ready:        p.cfg.ready == nil || p.cfg.ready() == nil,
		Status:       p.status(),
		Exporter:     p.exporter(ring),
		Filter:       f,
		Stats:        []keyRow{},
		Attention:    []attention{},
		Sessions:     []debugSession{},
		InFlight:     []debugRequest{},
		Traces:       []traceView{},
		TracesKept:   ring != nil,
	}
	for _, s := range p.srv.Sessions() {
		pending := s.Pending()
		ds := debugSession{
			ID:        cutString(s.ID()),
			Transport: events.transportOf(s),
			Protocol:  s.ProtocolVersion(),
			Started:   s.Started(),
			AgeMS:     millis(now.Sub(s.Started())),
			InFlight:  len(pending),

			principalView: events.principalOfSession(s),
		}
		// Only a session's initialize sets its protocol version; a
		// 2026-07-28 stateless request's connection never has one.
		ds.Era = "2025 session"
		if ds.Protocol == "" && !slices.ContainsFunc(pending, func(pr server.PendingRequest) bool { return pr.Method == "initialize" }) {
			ds.Era = "2026 stateless"
			// Observers hear of no session for it (transport.Single); it
			// came over HTTP, the only transport of that era here.
			ds.Transport = telemetry.TransportStreamableHTTP
		}
		if ci := s.ClientInfo(); ci.Name != "" {
			ds.Client = strings.TrimSpace(cutString(ci.Name) + " " + cutString(ci.Version))
		}
		if ds.Protocol == "" && len(pending) == 0 {
			continue // a session starting, or a stateless request finishing
		}
		if f.Session != "" && ds.ID != f.Session {
			continue
		}
		snap.Sessions = append(snap.Sessions, ds)
		for _, pr := range pending {
			dir := "incoming"
			if pr.Outgoing {
				dir = "outgoing"
			}
			dr := debugRequest{
				SessionID: ds.ID, Direction: dir, ID: cutString(pr.ID.String()), Method: cutString(pr.Method), Name: cutString(pr.Name),
				Started: pr.Started, AgeMS: millis(now.Sub(pr.Started)), principalView: ds.principalView,
			}
			dr.Key = keyOf(dr.Method, dr.Name)
			if f.Key != "" && dr.Key != f.Key {
				continue
			}
			snap.InFlight = append(snap.InFlight, dr)
		}
	}
	// sort.Slice, not slices.SortFunc, for the page's large rows: each
	// slices.SortFunc of a struct type is a generic sort of its own in
	// every program that links the page, sort.Slice one for all
	// (docs/performance.md, the README program's weight).
	sort.Slice(snap.Sessions, func(i, j int) bool {
		a, b := &snap.Sessions[i], &snap.Sessions[j]
		return cmp.Or(a.Started.Compare(b.Started), cmp.Compare(a.ID, b.ID)) < 0
	})
	sort.Slice(snap.InFlight, func(i, j int) bool { return snap.InFlight[i].Started.Before(snap.InFlight[j].Started) })

	for _, row := range events.stats.rows(now) {
		if f.Key == "" || row.Key == f.Key {
			snap.Stats = append(snap.Stats, row)
		}
	}
	sortRows(snap.Stats, f.Sort)

	cancels, drops, ended := events.recentSnapshot()
	match := func(session, key string) bool {
		return (f.Session == "" || session == f.Session) && (f.Key == "" || key == f.Key)
	}
	snap.Cancellations = slices.DeleteFunc(cancels, func(e cancelEvent) bool { return !match(e.SessionID, keyOf(e.Method, e.Name)) })
	snap.Drops = slices.DeleteFunc(drops, func(e dropEvent) bool { return !match(e.SessionID, keyOf(e.Method, e.Name)) })
	snap.EndedSessions = slices.DeleteFunc(ended, func(e endedSession) bool { return f.Session != "" && e.SessionID != f.Session })

	links := traceLinks(ring, linkFilter{Session: f.Session, Key: f.Key})
	snap.TracesKeptCount = len(links)
	if withTraces && ring != nil {
		listed := make(map[string]bool, len(links))
		for _, l := range links {
			listed[l.TraceID] = true
		}
		snap.Traces = slices.DeleteFunc(ring.snapshot(), func(tv traceView) bool { return !listed[tv.TraceID] })
	}
	snap.Attention = attentionOf(base, snap.Cancellations, snap.Drops, links, f.Outcome)
	snap.TraceSummary = summarize(base, links, f.Outcome)
	snap.Memory = p.memory(ring)
	return snap
}

// exporter names where spans go: the configured name, or what ring says.
func (p *debugPage) exporter(ring *spanRing) string {
	switch {
	case p.cfg.exporter != "":
		return p.cfg.exporter
	case ring != nil:
		return "in-memory ring"
	}
	return "none"
}

// keyOf is the stats key of a request: its method, or "tools/call NAME".
func keyOf(method, name string) string {
	if method == "tools/call" && name != "" {
		return statsToolPrefix + name
	}
	return method
}

func sortRows(rows []keyRow, by string) {
	val := func(r keyRow) float64 {
		m := r.Minute
		switch by {
		case "rate":
			return m.RatePerSec
		case "p50":
			return m.P50MS
		case "p95":
			return m.P95MS
		case "p99":
			return m.P99MS
		case "errors":
			return float64(m.Errors)
		case "cancelled":
			return float64(m.Cancelled)
		case "dropped":
			return float64(m.Dropped)
		case "total":
			return float64(r.Total.Requests)
		}
		return 0
	}
	sort.SliceStable(rows, func(i, j int) bool { // sort.Slice: see snapshot
		a, b := rows[i], rows[j]
		return cmp.Or(cmp.Compare(val(b), val(a)), cmp.Compare(a.Key, b.Key)) < 0
	})
}

// status returns the lines of WithStatus, nil without it.
func (p *debugPage) status() []string {
	if p.cfg.status == nil {
		return nil
	}
	return p.cfg.status()
}
