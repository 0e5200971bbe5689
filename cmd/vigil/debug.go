package main

import (
	"cmp"
	"context"
	"encoding/json"
	"html/template"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/vigil-mcp/vigil/server"
)

// debugPage serves /debug/vigil: a server-rendered page, refreshed by the
// browser every few seconds, showing the live sessions, the requests in
// flight (Session.Pending), the recent cancellations with their causes,
// dropped responses and ended sessions (from the eventLog observer), the
// principal (token subject and client, never the token) of each session,
// request and event when -auth-issuer is on, and
// the recent traces with their span trees (from the in-memory ring, when
// spans go there). ?format=json returns the same snapshot as JSON;
// ?refresh=N sets the refresh period in seconds (0: none). It is safe for
// concurrent use.
type debugPage struct {
	srv     *server.Server
	in      *instruments
	events  *eventLog
	ready   *atomic.Bool
	started time.Time
}

// debugSnapshot is what /debug/vigil shows.
type debugSnapshot struct {
	Now           time.Time      `json:"now"`
	Version       string         `json:"version"`
	UptimeMS      float64        `json:"uptime_ms"`
	Ready         bool           `json:"ready"`
	Exporter      string         `json:"trace_exporter"`
	Sessions      []debugSession `json:"sessions"`
	InFlight      []debugRequest `json:"in_flight"`
	Cancellations []cancelEvent  `json:"cancellations"`
	Drops         []dropEvent    `json:"dropped_responses"`
	EndedSessions []endedSession `json:"ended_sessions"`
	Traces        []traceView    `json:"traces"`
	TracesKept    bool           `json:"traces_kept"` // false when spans go elsewhere
}

// debugSession is a live session.
type debugSession struct {
	ID        string    `json:"id"`
	Transport string    `json:"transport"`
	Protocol  string    `json:"protocol_version"` // "" until initialize, and for a stateless request
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
	Started   time.Time `json:"started"`
	AgeMS     float64   `json:"age_ms"`

	principalView // its session's (subject, client_id), with -auth-issuer
}

func (p *debugPage) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), time.Second)
	p.in.flush(ctx) // export the spans still batched into the ring
	cancel()
	snap := p.snapshot(time.Now())
	w.Header().Set("Cache-Control", "no-store")
	if r.URL.Query().Get("format") == "json" {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(snap)
		return
	}
	refresh := 2
	if v, err := strconv.Atoi(r.URL.Query().Get("refresh")); err == nil && v >= 0 {
		refresh = min(v, 3600)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = debugTemplate.Execute(w, struct {
		debugSnapshot
		Refresh int
	}{snap, refresh})
}

// snapshot gathers what the page shows, as of now.
func (p *debugPage) snapshot(now time.Time) debugSnapshot {
	snap := debugSnapshot{
		Now:        now,
		Version:    version,
		UptimeMS:   millis(now.Sub(p.started)),
		Ready:      p.ready.Load(),
		Exporter:   p.in.exporter,
		Sessions:   []debugSession{},
		InFlight:   []debugRequest{},
		Traces:     []traceView{},
		TracesKept: p.in.ring != nil,
	}
	for _, s := range p.srv.Sessions() {
		pending := s.Pending()
		ds := debugSession{
			ID:        s.ID(),
			Transport: p.events.transportOf(s),
			Protocol:  s.ProtocolVersion(),
			Started:   s.Started(),
			AgeMS:     millis(now.Sub(s.Started())),
			InFlight:  len(pending),

			principalView: p.events.principalOfSession(s),
		}
		if ci := s.ClientInfo(); ci.Name != "" {
			ds.Client = strings.TrimSpace(ci.Name + " " + ci.Version)
		}
		if ds.Protocol == "" && len(pending) == 0 {
			continue // a session starting, or a stateless request finishing
		}
		snap.Sessions = append(snap.Sessions, ds)
		for _, pr := range pending {
			dir := "incoming"
			if pr.Outgoing {
				dir = "outgoing"
			}
			snap.InFlight = append(snap.InFlight, debugRequest{
				SessionID: ds.ID, Direction: dir, ID: pr.ID.String(), Method: pr.Method, Name: pr.Name,
				Started: pr.Started, AgeMS: millis(now.Sub(pr.Started)), principalView: ds.principalView,
			})
		}
	}
	slices.SortFunc(snap.Sessions, func(a, b debugSession) int {
		return cmp.Or(a.Started.Compare(b.Started), cmp.Compare(a.ID, b.ID))
	})
	slices.SortFunc(snap.InFlight, func(a, b debugRequest) int { return a.Started.Compare(b.Started) })
	snap.Cancellations, snap.Drops, snap.EndedSessions = p.events.recentSnapshot()
	if p.in.ring != nil {
		snap.Traces = p.in.ring.snapshot()
	}
	return snap
}

// keyAttributes are the span attributes the page shows, in this order.
var keyAttributes = []string{
	"jsonrpc.request.id", "mcp.session.id", "mcp.protocol.version", "gen_ai.tool.name",
	"gen_ai.prompt.name", "mcp.resource.uri", "network.transport", "error.type", "vigil.cancel.cause",
}

var debugTemplate = template.Must(template.New("debug").Funcs(template.FuncMap{
	"ms": func(v float64) string {
		switch {
		case v >= 10000:
			return strconv.FormatFloat(v/1000, 'f', 1, 64) + " s"
		case v >= 100:
			return strconv.FormatFloat(v, 'f', 0, 64) + " ms"
		default:
			return strconv.FormatFloat(v, 'f', 2, 64) + " ms"
		}
	},
	"clock": func(t time.Time) string { return t.Format("15:04:05.000") },
	"short": func(id string) string {
		if len(id) > 12 {
			return id[:12] + "…"
		}
		return id
	},
	"indent": func(depth int) int { return depth * 18 },
	"keyattrs": func(attrs map[string]string) []string {
		var out []string
		for _, k := range keyAttributes {
			if v, ok := attrs[k]; ok {
				out = append(out, k+"="+v)
			}
		}
		return out
	},
	"events": func(evs []spanEvent) []string {
		out := make([]string, 0, len(evs))
		for _, e := range evs {
			s := e.Name
			keys := make([]string, 0, len(e.Attributes))
			for k := range e.Attributes {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				s += " " + k + "=" + e.Attributes[k]
			}
			out = append(out, s)
		}
		return out
	},
	"orNone": func(s string) string { return cmp.Or(s, "—") },
}).Parse(debugHTML))

const debugHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
{{if .Refresh}}<meta http-equiv="refresh" content="{{.Refresh}}">{{end}}
<title>Vigil</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.4em; margin-bottom: .2em; } h2 { font-size: 1.1em; margin-top: 1.6em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; } td, th { padding: 2px 10px 2px 0; text-align: left; vertical-align: top; }
th { color: #666; font-weight: 600; } code, .mono { font-family: ui-monospace, monospace; font-size: 12px; }
.muted { color: #888; } .err { color: #b00020; } .ok { color: #1b5e20; } .warn { color: #a15c00; }
.trace { margin: .6em 0; } .trace summary { cursor: pointer; }
.attrs { color: #555; }
</style>
</head>
<body>
<h1>Vigil {{.Version}}</h1>
<div class="muted">{{clock .Now}} · up {{ms .UptimeMS}} ·
{{if .Ready}}<span class="ok">ready</span>{{else}}<span class="warn">draining</span>{{end}} ·
traces: {{.Exporter}} · <a href="/metrics">/metrics</a> · <a href="?format=json">JSON</a> ·
{{if .Refresh}}refreshes every {{.Refresh}} s (<a href="?refresh=0">stop</a>){{else}}<a href="?">auto-refresh</a>{{end}}</div>

<h2>Sessions ({{len .Sessions}})</h2>
{{if .Sessions}}<table>
<tr><th>id</th><th>transport</th><th>protocol</th><th>client</th><th>principal</th><th>started</th><th>age</th><th>in flight</th></tr>
{{range .Sessions}}<tr><td class="mono" title="{{.ID}}">{{short .ID}}</td><td>{{orNone .Transport}}</td><td>{{orNone .Protocol}}</td><td>{{orNone .Client}}</td><td>{{template "principal" .}}</td><td>{{clock .Started}}</td><td>{{ms .AgeMS}}</td><td>{{.InFlight}}</td></tr>
{{end}}</table>{{else}}<p class="muted">No session.</p>{{end}}

<h2>In flight ({{len .InFlight}})</h2>
{{if .InFlight}}<table>
<tr><th>session</th><th>principal</th><th>direction</th><th>id</th><th>method</th><th>name</th><th>running for</th></tr>
{{range .InFlight}}<tr><td class="mono" title="{{.SessionID}}">{{short .SessionID}}</td><td>{{template "principal" .}}</td><td>{{.Direction}}</td><td class="mono">{{.ID}}</td><td>{{.Method}}</td><td>{{.Name}}</td><td>{{ms .AgeMS}}</td></tr>
{{end}}</table>{{else}}<p class="muted">Nothing in flight.</p>{{end}}

<h2>Recent cancellations ({{len .Cancellations}})</h2>
{{if .Cancellations}}<table>
<tr><th>at</th><th>session</th><th>principal</th><th>id</th><th>method</th><th>name</th><th>reason</th><th>after</th><th>cause</th></tr>
{{range .Cancellations}}<tr><td>{{clock .Time}}</td><td class="mono" title="{{.SessionID}}">{{short .SessionID}}</td><td>{{template "principal" .}}</td><td class="mono">{{.RequestID}}</td><td>{{.Method}}</td><td>{{.Name}}</td><td class="warn">{{.Reason}}</td><td>{{ms .RanFor}}</td><td class="mono">{{.Cause}}</td></tr>
{{end}}</table>{{else}}<p class="muted">None yet.</p>{{end}}

<h2>Recent dropped responses ({{len .Drops}})</h2>
{{if .Drops}}<table>
<tr><th>at</th><th>session</th><th>principal</th><th>id</th><th>method</th><th>name</th><th>reason</th></tr>
{{range .Drops}}<tr><td>{{clock .Time}}</td><td class="mono" title="{{.SessionID}}">{{short .SessionID}}</td><td>{{template "principal" .}}</td><td class="mono">{{.RequestID}}</td><td>{{.Method}}</td><td>{{.Name}}</td><td class="warn">{{.Reason}}</td></tr>
{{end}}</table>{{else}}<p class="muted">None yet.</p>{{end}}

<h2>Recently ended sessions ({{len .EndedSessions}})</h2>
{{if .EndedSessions}}<table>
<tr><th>at</th><th>session</th><th>principal</th><th>transport</th><th>protocol</th><th>lasted</th><th>reason</th><th>cause</th></tr>
{{range .EndedSessions}}<tr><td>{{clock .Time}}</td><td class="mono" title="{{.SessionID}}">{{short .SessionID}}</td><td>{{template "principal" .}}</td><td>{{orNone .Transport}}</td><td>{{.Protocol}}</td><td>{{ms .DurationMS}}</td><td>{{.Reason}}</td><td class="mono">{{.Cause}}</td></tr>
{{end}}</table>{{else}}<p class="muted">None yet.</p>{{end}}

<h2>Recent traces ({{len .Traces}})</h2>
{{if not .TracesKept}}<p class="muted">Spans go to {{.Exporter}}; they are not kept here. Leave OTEL_TRACES_EXPORTER and OTEL_EXPORTER_OTLP_ENDPOINT unset to keep recent traces in memory.</p>
{{else if not .Traces}}<p class="muted">No trace yet: call a tool.</p>{{end}}
{{range $i, $t := .Traces}}<details class="trace"{{if lt $i 5}} open{{end}}>
<summary><span class="{{if $t.Error}}err{{else}}ok{{end}}">●</span> <b>{{$t.Root}}</b> · {{ms $t.DurationMS}} · {{len $t.Spans}} span(s) · {{clock $t.Start}} · <span class="mono muted">{{$t.TraceID}}</span>{{if $t.DroppedSpans}} · {{$t.DroppedSpans}} spans not kept{{end}}</summary>
<table>
{{range $t.Spans}}<tr><td style="padding-left: {{indent .Depth}}px">{{.Name}} <span class="muted">{{.Kind}}</span></td><td>{{ms .DurationMS}}</td>
<td class="{{if eq .Status "error"}}err{{end}}">{{.Status}}{{if .StatusDescription}}: {{.StatusDescription}}{{end}}</td>
<td class="attrs mono">{{range keyattrs .Attributes}}{{.}} {{end}}{{range events .Events}}<br>event {{.}}{{end}}</td></tr>
{{end}}</table>
</details>
{{end}}
</body>
</html>
{{define "principal"}}{{if .Subject}}<span class="mono">{{.Subject}}</span>{{if and .ClientID (ne .ClientID .Subject)}} <span class="muted">(client <span class="mono">{{.ClientID}}</span>)</span>{{end}}{{else}}<span class="muted">—</span>{{end}}{{end}}`
