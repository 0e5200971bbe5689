package debugpage

import (
	"cmp"
	"html/template"
	"net/url"
	"strconv"
	"time"
)

// debugHTMLRows is how many sessions and requests in flight the HTML
// lists, at most (the oldest requests, the oldest sessions); the JSON form
// has them all.
const debugHTMLRows = 100

// debugView is what the page's template renders.
type debugView struct {
	debugSnapshot
	Refresh    int
	Base       string // where the page is mounted: its own path
	MetricsURL string // where the header links for metrics; "": nowhere
	Query      pageQuery
	Charts     debugCharts
}

// pageQuery is the query of the current view, and where the page is
// mounted: what the links to other views start from (debugLink).
type pageQuery struct {
	base   string
	values url.Values
}

// debugLink returns the URL of the current view (q) with the given
// parameters set (an empty value removes one), without format.
func debugLink(q pageQuery, kv ...string) string {
	v := url.Values{}
	for k, vs := range q.values {
		if k != "format" && k != "series" {
			v[k] = vs
		}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			v.Del(kv[i])
		} else {
			v.Set(kv[i], kv[i+1])
		}
	}
	return q.base + "?" + v.Encode()
}

func fmtBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
	case n >= 1<<10:
		return strconv.FormatFloat(float64(n)/(1<<10), 'f', 0, 64) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " B"
}

// newPageTemplate parses the page's template (debugHTML).
func newPageTemplate() *template.Template {
	return template.Must(template.New("debug").Funcs(template.FuncMap{
		"ms":    formatMS,
		"clock": func(t time.Time) string { return t.Format("15:04:05.000") },
		"short": func(id string) string {
			if len(id) > 12 {
				return id[:12] + "…"
			}
			return id
		},
		"orNone": func(s string) string { return cmp.Or(s, "—") },
		"link":   debugLink,
		"bytes":  fmtBytes,
		"rate": func(v float64) string {
			if v >= 10 {
				return strconv.FormatFloat(v, 'f', 0, 64)
			}
			return strconv.FormatFloat(v, 'f', 2, 64)
		},
		"num":      func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) },
		"rows":     func() int { return debugHTMLRows },
		"more":     func(n int) int { return max(n-debugHTMLRows, 0) },
		"filtered": func(f debugFilter) bool { return f.Session != "" || f.Key != "" || f.Outcome != "" },
	}).Parse(debugHTML))
}

const debugHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
{{if .Refresh}}<meta http-equiv="refresh" content="{{.Refresh}}">{{end}}
<title>{{.Service}}{{with .Version}} {{.}}{{end}}</title>
<link rel="stylesheet" href="{{.Base}}/style.css">
<link rel="icon" href="{{.Base}}/favicon.svg" type="image/svg+xml">
</head>
<body>
<header>
<h1>{{.Service}}{{with .Version}} {{.}}{{end}}</h1>
<span class="status">Vigil {{.VigilVersion}} · {{clock .Now}} · up {{ms .UptimeMS}} ·
{{if .Ready}}<span class="ok">ready</span>{{else}}<span class="warn">draining</span>{{end}} ·
traces: {{.Exporter}} · {{with .MetricsURL}}<a href="{{.}}">{{.}}</a> · {{end}}<a id="json-link" href="{{link .Query "format" "json"}}">JSON</a> ·
{{if .Refresh}}refreshes every {{.Refresh}} s (<a href="{{link .Query "refresh" "0"}}">stop</a>){{else}}<a href="{{link .Query "refresh" ""}}">auto-refresh</a>{{end}} ·
memory bound {{bytes .Memory.Total}}{{if not .Memory.RingBound}} + trace ring{{end}}</span>
{{range .Status}}<div class="status">{{.}}</div>
{{end}}</header>
<nav class="filters" id="filters">show:
<a href="{{link .Query "outcome" ""}}">all</a>
<a href="{{link .Query "outcome" "error"}}">errors</a>
<a href="{{link .Query "outcome" "cancelled"}}">cancelled</a>
<a href="{{link .Query "outcome" "dropped"}}">dropped</a>
<a href="{{link .Query "outcome" "slow"}}">slow</a>
{{if filtered .Filter}}<span class="filter-on" id="filter-on">filtered:
{{with .Filter.Session}} session <span class="mono">{{short .}}</span>{{end}}
{{with .Filter.Key}} {{.}}{{end}}
{{with .Filter.Outcome}} {{.}}{{end}}
· <a href="{{.Base}}?refresh={{.Refresh}}">clear</a></span>{{end}}
</nav>

<section id="attention">
<h2>Needs attention ({{len .Attention}})</h2>
{{if .Attention}}<table>
<tr><th>what</th><th>at</th><th>method / tool</th><th class="n">took</th><th>cause</th><th>trace</th><th>session</th><th>id</th><th>principal</th><th>detail</th></tr>
{{range .Attention}}<tr class="att att-{{.Kind}}"><td><span class="kind kind-{{.Kind}}">{{.Kind}}</span></td><td>{{clock .Time}}</td>
<td class="a-key"><a href="{{link $.Query "key" .Key}}">{{.Key}}</a></td><td class="n a-took">{{ms .DurationMS}}</td><td class="mono a-reason">{{orNone .Reason}}</td>
<td>{{if .TraceURL}}<a class="trace-link mono" href="{{.TraceURL}}">{{short .TraceID}}</a>{{else}}<span class="muted">—</span>{{end}}</td>
<td class="mono">{{if .SessionID}}<a href="{{link $.Query "session" .SessionID}}" title="{{.SessionID}}">{{short .SessionID}}</a>{{else}}—{{end}}</td>
<td class="mono a-id">{{.RequestID}}</td><td>{{template "principal" .}}</td><td class="detail mono" title="{{.Detail}}">{{.Detail}}</td></tr>
{{end}}</table>{{else}}<p class="muted">Nothing: no error, cancellation, dropped response or kept trace{{if filtered .Filter}} in this view{{end}}.</p>{{end}}
</section>

<div class="grid">
<section id="methods">
<h2>Methods and tools</h2>
{{if .Stats}}<table id="stats">
<tr><th></th><th class="group" colspan="7">last minute</th><th class="group" colspan="5">since start</th></tr>
<tr><th><a href="{{link .Query "sort" "key"}}">method / tool</a></th>
<th class="n"><a href="{{link .Query "sort" "rate"}}">req/s</a></th><th class="n"><a href="{{link .Query "sort" "p50"}}">p50</a></th>
<th class="n"><a href="{{link .Query "sort" "p95"}}">p95</a></th><th class="n"><a href="{{link .Query "sort" "p99"}}">p99</a></th>
<th class="n"><a href="{{link .Query "sort" "errors"}}">errors</a></th><th class="n"><a href="{{link .Query "sort" "cancelled"}}">cancelled</a></th>
<th class="n"><a href="{{link .Query "sort" "dropped"}}">dropped</a></th>
<th class="n"><a href="{{link .Query "sort" "total"}}">requests</a></th><th class="n">p99</th><th class="n">errors</th><th class="n">cancelled</th><th class="n">dropped</th></tr>
{{range .Stats}}<tr class="stat-row" data-key="{{.Key}}"><td><a href="{{link $.Query "key" .Key}}">{{.Key}}</a></td>
{{with .Minute}}<td class="n">{{rate .RatePerSec}}</td><td class="n">{{ms .P50MS}}</td><td class="n">{{ms .P95MS}}</td><td class="n">{{ms .P99MS}}</td>
<td class="n c-errors{{if .Errors}} err{{else}} zero{{end}}">{{.Errors}}</td><td class="n c-cancelled{{if .Cancelled}} warn{{else}} zero{{end}}">{{.Cancelled}}</td><td class="n c-dropped{{if .Dropped}} warn{{else}} zero{{end}}">{{.Dropped}}</td>{{end}}
{{with .Total}}<td class="n c-total">{{.Requests}}</td><td class="n">{{ms .P99MS}}</td><td class="n t-errors{{if .Errors}} err{{else}} zero{{end}}">{{.Errors}}</td>
<td class="n t-cancelled{{if .Cancelled}} warn{{else}} zero{{end}}">{{.Cancelled}}</td><td class="n t-dropped{{if .Dropped}} warn{{else}} zero{{end}}">{{.Dropped}}</td>{{end}}</tr>
{{end}}</table>
<p class="muted note">errors: JSON-RPC errors and isError results. cancelled: by client, transport,<br>shutdown or timeout. A heading sorts; a name filters.</p>
{{else}}<p class="muted">No request yet{{if filtered .Filter}} in this view{{end}}.</p>{{end}}
</section>

<section id="charts">
<h2>Last 10 minutes</h2>
{{template "line" .Charts.Rate}}
{{template "line" .Charts.P99}}
{{with .Charts.Outcomes}}<div class="chart-title">{{.Title}} · max {{.Max}}</div>
<svg class="chart" id="chart-outcomes" width="{{.W}}" height="{{.H}}" viewBox="0 0 {{.W}} {{.H}}" role="img" aria-label="{{.Title}}">
<rect x="0" y="0" width="{{.W}}" height="{{.H}}" fill="#fafafa" stroke="#ddd"/>
{{range .Rects}}<rect x="{{num .X}}" y="{{num .Y}}" width="{{num .W}}" height="{{num .H}}" fill="{{.Fill}}"><title>{{.Title}}</title></rect>{{end}}
</svg>
<div class="legend">{{range .Legend}}<span class="{{.Class}}">■ {{.Name}} {{.Count}}</span> {{else}}<span class="muted">no request in the last 10 minutes</span>{{end}}</div>{{end}}
</section>
</div>

<section id="inflight">
<h2>In flight ({{len .InFlight}}), oldest first</h2>
{{if .InFlight}}<table>
<tr><th class="n">running for</th><th>method / tool</th><th>direction</th><th>id</th><th>session</th><th>principal</th></tr>
{{range $i, $r := .InFlight}}{{if lt $i rows}}<tr><td class="n">{{ms .AgeMS}}</td><td><a href="{{link $.Query "key" .Key}}">{{.Key}}</a></td><td>{{.Direction}}</td><td class="mono">{{.ID}}</td>
<td class="mono"><a href="{{link $.Query "session" .SessionID}}" title="{{.SessionID}}">{{short .SessionID}}</a></td><td>{{template "principal" .}}</td></tr>
{{end}}{{end}}</table>{{with more (len .InFlight)}}<p class="muted">and {{.}} more: see the JSON form, or filter by session.</p>{{end}}{{else}}<p class="muted">Nothing in flight.</p>{{end}}
</section>

<section id="sessions">
<h2>Sessions ({{len .Sessions}})</h2>
{{if .Sessions}}<table>
<tr><th>id</th><th>transport</th><th>era</th><th>protocol</th><th>client</th><th>principal</th><th>age</th><th class="n">in flight</th></tr>
{{range $i, $s := .Sessions}}{{if lt $i rows}}<tr><td class="mono"><a href="{{link $.Query "session" .ID}}" title="{{.ID}}">{{short .ID}}</a></td><td>{{orNone .Transport}}</td><td>{{.Era}}</td><td>{{orNone .Protocol}}</td><td>{{orNone .Client}}</td><td>{{template "principal" .}}</td><td>{{ms .AgeMS}}</td><td class="n">{{.InFlight}}</td></tr>
{{end}}{{end}}</table>{{with more (len .Sessions)}}<p class="muted">and {{.}} more: see the JSON form.</p>{{end}}{{else}}<p class="muted">No session.</p>{{end}}
</section>

<section id="traces">
<h2>Kept traces ({{.TracesKeptCount}}), by method / tool</h2>
{{if not .TracesKept}}<p class="muted">Spans go to {{.Exporter}}; they are not kept here. Leave OTEL_TRACES_EXPORTER and OTEL_EXPORTER_OTLP_ENDPOINT unset to keep recent traces in memory.</p>
{{else if not .TraceSummary}}<p class="muted">No trace{{if filtered .Filter}} in this view{{else}} yet: call a tool{{end}}.</p>
{{else}}<table>
<tr><th>method / tool</th><th class="n">traces</th><th class="n">errors</th><th class="n">cancelled</th><th class="n">dropped</th><th class="n">slowest</th><th>latest</th></tr>
{{range .TraceSummary}}<tr><td><a href="{{link $.Query "key" .Key}}">{{.Key}}</a></td><td class="n">{{.Count}}</td><td class="n">{{.Errors}}</td><td class="n">{{.Cancelled}}</td><td class="n">{{.Dropped}}</td>
<td class="n"><a href="{{.SlowestURL}}">{{ms .MaxMS}}</a></td><td><a class="mono" href="{{.LatestURL}}">{{short .LatestID}}</a></td></tr>
{{end}}</table>{{end}}
</section>

<section id="ended">
<h2>Recently ended sessions ({{len .EndedSessions}})</h2>
{{if .EndedSessions}}<table>
<tr><th>at</th><th>session</th><th>principal</th><th>transport</th><th>protocol</th><th>lasted</th><th>reason</th><th>cause</th></tr>
{{range .EndedSessions}}<tr><td>{{clock .Time}}</td><td class="mono" title="{{.SessionID}}">{{short .SessionID}}</td><td>{{template "principal" .}}</td><td>{{orNone .Transport}}</td><td>{{.Protocol}}</td><td>{{ms .DurationMS}}</td><td>{{.Reason}}</td><td class="mono detail" title="{{.Cause}}">{{.Cause}}</td></tr>
{{end}}</table>{{else}}<p class="muted">None yet.</p>{{end}}
</section>

<footer id="memory">Memory bound of this page's data: {{bytes .Memory.Total}} —
request stats {{bytes .Memory.StatsBound}} (in use {{bytes .Memory.StatsInUse}}), event log {{bytes .Memory.EventsBound}},
trace ring {{if .Memory.RingBound}}{{bytes .Memory.RingBound}}{{else}}not stated{{end}} ({{.Memory.RingTraces}} traces).
Read-only; no script.</footer>
</body>
</html>
{{define "line"}}<div class="chart-title">{{.Title}} · max {{.Max}}</div>
<svg class="chart" width="{{.W}}" height="{{.H}}" viewBox="0 0 {{.W}} {{.H}}" role="img" aria-label="{{.Title}}">
<rect x="0" y="0" width="{{.W}}" height="{{.H}}" fill="#fafafa" stroke="#ddd"/>
<polygon points="{{.Area}}" fill="#bbdefb"/>
<polyline points="{{.Points}}" fill="none" stroke="#1565c0" stroke-width="1.2"/>
</svg>{{end}}
{{define "principal"}}{{if .Subject}}{{if .Actor}}<span class="mono">{{.Actor}}</span> <span class="muted">on behalf of</span> {{end}}<span class="mono">{{.Subject}}</span>{{if and .ClientID (ne .ClientID .Subject)}} <span class="muted">(client <span class="mono">{{.ClientID}}</span>)</span>{{end}}{{else}}<span class="muted">—</span>{{end}}{{end}}`
