package main

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// debugHTMLRows is how many sessions and requests in flight the HTML
// lists, at most (the oldest requests, the oldest sessions); the JSON form
// has them all.
const debugHTMLRows = 100

// debugView is what the page's template renders.
type debugView struct {
	debugSnapshot
	Refresh int
	Query   url.Values
	Charts  debugCharts
}

// debugStyleHandler serves the page's stylesheet (GET /debug/vigil/style.css).
func debugStyleHandler(w http.ResponseWriter, r *http.Request) {
	serveDebugAsset(w, r, "text/css; charset=utf-8", debugCSS)
}

// debugIconHandler serves the page's icon (GET /debug/vigil/favicon.svg).
func debugIconHandler(w http.ResponseWriter, r *http.Request) {
	serveDebugAsset(w, r, "image/svg+xml", debugIcon)
}

// assetTag is the ETag of an asset: a hash of its body.
func assetTag(body string) string {
	sum := sha256.Sum256([]byte(body))
	return `"` + hex.EncodeToString(sum[:8]) + `"`
}

func serveDebugAsset(w http.ResponseWriter, r *http.Request, contentType, body string) {
	setDebugHeaders(w)
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("Content-Type", contentType)
	tag := assetTag(body)
	w.Header().Set("ETag", tag)
	if r.Header.Get("If-None-Match") == tag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	_, _ = w.Write([]byte(body))
}

const debugIcon = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><circle cx="8" cy="8" r="7" fill="#1b5e20"/><circle cx="8" cy="8" r="3" fill="#fff"/></svg>`

const debugCSS = `body { font: 13px/1.35 system-ui, sans-serif; margin: 0.8em 1.2em; color: #222; }
h1 { font-size: 1.3em; margin: 0 0 .15em; display: inline-block; margin-right: .6em; }
h2 { font-size: 1.02em; margin: .9em 0 .3em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; }
td, th { padding: 1px 9px 1px 0; text-align: left; vertical-align: top; white-space: nowrap; }
th { color: #666; font-weight: 600; }
th.group { text-align: center; border-bottom: 1px solid #ddd; }
td.n, th.n { text-align: right; }
code, .mono { font-family: ui-monospace, monospace; font-size: 12px; }
.muted { color: #888; } .err { color: #b00020; } .ok { color: #1b5e20; } .warn { color: #a15c00; }
.zero { color: #bbb; }
a { color: #0b57d0; text-decoration: none; } a:hover { text-decoration: underline; }
.status { color: #666; }
.filters a { margin-right: .5em; }
.filter-on { background: #fff3cd; padding: 2px 6px; }
.grid { display: flex; flex-wrap: wrap; gap: 0 2.5em; align-items: flex-start; }
.kind { display: inline-block; min-width: 5.5em; font-weight: 600; }
.kind-error { color: #b00020; } .kind-cancelled { color: #1e66c9; } .kind-dropped { color: #a15c00; } .kind-slow { color: #6a1b9a; }
.detail { max-width: 40em; overflow: hidden; text-overflow: ellipsis; }
#charts { width: 440px; }
.chart { display: block; margin-bottom: 2px; }
.chart-title { font-size: 12px; color: #444; margin-top: 4px; }
.legend span { margin-right: .8em; font-size: 12px; white-space: nowrap; }
.sw-0 { color: #4caf50; } .sw-1 { color: #ff9800; } .sw-2 { color: #d32f2f; } .sw-3 { color: #1e88e5; }
.sw-4 { color: #5e35b1; } .sw-5 { color: #8d6e63; } .sw-6 { color: #00897b; } .sw-7 { color: #9e9e9e; }
.sw-8 { color: #f06292; } .sw-9 { color: #ad1457; } .sw-10 { color: #6d4c41; } .sw-11 { color: #424242; }
footer { margin-top: 1.5em; color: #777; font-size: 12px; }
`

// chart geometry, in SVG user units (pixels).
const (
	chartW    = 440
	chartH    = 70
	chartCols = 60 // ten-second columns of the outcome chart
)

// debugCharts are the page's three charts.
type debugCharts struct {
	Rate, P99 lineChart
	Outcomes  stackChart
}

type lineChart struct {
	Title  string
	Max    string // the top of the y axis, as text
	Points string // the polyline, "x,y x,y ..."
	Area   string // the polygon under it
	W, H   int
}

type stackChart struct {
	Title  string
	Max    string
	Rects  []chartRect
	Legend []legendItem
	W, H   int
}

type chartRect struct {
	X, Y, W, H float64
	Fill       string
	Title      string
}

type legendItem struct {
	Class, Name string
	Count       uint64
}

func chartsOf(series []secondStat) debugCharts {
	var c debugCharts
	rates := make([]float64, len(series))
	p99s := make([]float64, len(series))
	for i, s := range series {
		rates[i] = float64(s.Requests)
		p99s[i] = s.P99MS
	}
	c.Rate = lineOf("requests/s", rates, func(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) + "/s" })
	c.P99 = lineOf("p99 latency", p99s, formatMS)
	c.Outcomes = stackOf(series)
	return c
}

func lineOf(title string, vals []float64, label func(float64) string) lineChart {
	top := 0.0
	for _, v := range vals {
		top = max(top, v)
	}
	lc := lineChart{Title: title, Max: label(top), W: chartW, H: chartH}
	if top == 0 {
		top = 1
	}
	var pts strings.Builder
	n := max(len(vals)-1, 1)
	for i, v := range vals {
		x := float64(i) * chartW / float64(n)
		y := chartH - 1 - v/top*(chartH-4)
		if i > 0 {
			pts.WriteByte(' ')
		}
		pts.WriteString(strconv.FormatFloat(x, 'f', 1, 64) + "," + strconv.FormatFloat(y, 'f', 1, 64))
	}
	lc.Points = pts.String()
	lc.Area = "0," + strconv.Itoa(chartH) + " " + lc.Points + " " + strconv.Itoa(chartW) + "," + strconv.Itoa(chartH)
	return lc
}

func stackOf(series []secondStat) stackChart {
	sc := stackChart{Title: "outcomes per 10 s", W: chartW, H: chartH}
	per := max(len(series)/chartCols, 1)
	cols := make([][slotCount]uint64, chartCols)
	var totals [slotCount]uint64
	for i, s := range series {
		c := min(i/per, chartCols-1)
		for k, v := range s.ByOutcome {
			cols[c][k] += v
			totals[k] += v
		}
	}
	var top uint64
	for _, col := range cols {
		var sum uint64
		for _, v := range col {
			sum += v
		}
		top = max(top, sum)
	}
	sc.Max = strconv.FormatUint(top, 10)
	if top == 0 {
		top = 1
	}
	w := float64(chartW) / chartCols
	for ci, col := range cols {
		y := float64(chartH)
		for k, v := range col {
			if v == 0 {
				continue
			}
			h := float64(v) / float64(top) * (chartH - 2)
			y -= h
			sc.Rects = append(sc.Rects, chartRect{
				X: float64(ci) * w, Y: y, W: w - 1, H: h, Fill: slotColors[k],
				Title: slotNames[k] + ": " + strconv.FormatUint(v, 10),
			})
		}
	}
	for k, v := range totals {
		if v > 0 {
			sc.Legend = append(sc.Legend, legendItem{Class: "sw-" + strconv.Itoa(k), Name: slotNames[k], Count: v})
		}
	}
	return sc
}

// debugLink returns the URL of the current view (q) with the given
// parameters set (an empty value removes one), without format.
func debugLink(q url.Values, kv ...string) string {
	v := url.Values{}
	for k, vs := range q {
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
	return "/debug/vigil?" + v.Encode()
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

var debugTemplate = template.Must(template.New("debug").Funcs(template.FuncMap{
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

const debugHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
{{if .Refresh}}<meta http-equiv="refresh" content="{{.Refresh}}">{{end}}
<title>Vigil</title>
<link rel="stylesheet" href="/debug/vigil/style.css">
<link rel="icon" href="/debug/vigil/favicon.svg" type="image/svg+xml">
</head>
<body>
<header>
<h1>Vigil {{.Version}}</h1>
<span class="status">{{clock .Now}} · up {{ms .UptimeMS}} ·
{{if .Ready}}<span class="ok">ready</span>{{else}}<span class="warn">draining</span>{{end}} ·
traces: {{.Exporter}} · <a href="/metrics">/metrics</a> · <a id="json-link" href="{{link .Query "format" "json"}}">JSON</a> ·
{{if .Refresh}}refreshes every {{.Refresh}} s (<a href="{{link .Query "refresh" "0"}}">stop</a>){{else}}<a href="{{link .Query "refresh" ""}}">auto-refresh</a>{{end}} ·
memory bound {{bytes .Memory.Total}}{{if not .Memory.RingBound}} + trace ring{{end}}</span>
</header>
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
· <a href="/debug/vigil?refresh={{.Refresh}}">clear</a></span>{{end}}
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
{{define "principal"}}{{if .Subject}}<span class="mono">{{.Subject}}</span>{{if and .ClientID (ne .ClientID .Subject)}} <span class="muted">(client <span class="mono">{{.ClientID}}</span>)</span>{{end}}{{else}}<span class="muted">—</span>{{end}}{{end}}`
