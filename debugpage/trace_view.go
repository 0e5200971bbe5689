package debugpage

import (
	"cmp"
	"encoding/json"
	"html/template"
	"net/http"
	"slices"
	"strconv"

	"go.opentelemetry.io/otel/trace"
)

// traceViewSiblings is how many other kept traces of the same key the
// trace view links to.
const traceViewSiblings = 20

// serveTrace serves the view of the kept trace id (32 hex digits), for
// the page mounted at base: the waterfall of its span tree, or with
// ?format=json the traceView. An id the ring does not hold, or every id
// while there is no ring, is 404.
func (p *debugPage) serveTrace(w http.ResponseWriter, r *http.Request, base, id string) {
	setDebugHeaders(w)
	ring := p.rec.traceRing()
	if ring == nil {
		http.Error(w, "traces are not kept in memory: spans go to an exporter", http.StatusNotFound)
		return
	}
	tid, err := trace.TraceIDFromHex(id)
	if err != nil {
		http.Error(w, "no such trace: a trace id is 32 hex digits", http.StatusNotFound)
		return
	}
	v, ok := ring.lookup(tid)
	if !ok {
		http.Error(w, "no such trace (or no longer kept)", http.StatusNotFound)
		return
	}
	if r.URL.Query().Get("format") == "json" {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(v)
		return
	}
	page := newTracePage(v)
	page.Base = base
	page.Service = cmp.Or(p.cfg.name, "MCP server")
	page.Memory = ring.memory()
	if v.Key != "" {
		for _, s := range ring.list(traceFilter{Key: v.Key, Limit: traceViewSiblings + 1}) {
			if s.TraceID != v.TraceID && len(page.Siblings) < traceViewSiblings {
				page.Siblings = append(page.Siblings, s)
			}
		}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = p.traceView.Execute(w, page)
}

// newTraceTemplate parses the trace view's template (traceViewHTML).
func newTraceTemplate() *template.Template {
	return template.Must(template.New("trace").Funcs(template.FuncMap{"ms": formatMS, "bytes": formatBytes}).Parse(traceViewHTML))
}

// tracePage is what the trace view's template shows.
type tracePage struct {
	traceView
	Base     string // where the page is mounted
	Service  string // the service's name (WithService), for the title and the link back
	Rows     []traceRow
	Siblings []traceSummary // other kept traces of the same key
	Memory   ringMemory     // of the whole ring
}

// traceRow is a span of the waterfall.
type traceRow struct {
	spanRecord
	Indent   []struct{} // one per level of depth, at most traceViewMaxIndent
	OffsetMS float64    // from the trace's start
	BarX     string     // the bar in the SVG's 0..1000 width
	BarW     string
	Attrs    []keyValue // sorted by key
	Events   []eventRow
	Cause    string // vigil.cancel.cause
}

// eventRow is an event of a span, its time from the trace's start.
type eventRow struct {
	Name  string
	AtMS  float64
	Attrs []keyValue
}

// keyValue is an attribute.
type keyValue struct{ Key, Value string }

// traceViewMaxIndent bounds the indentation of deep spans.
const traceViewMaxIndent = 24

// newTracePage lays v out as a waterfall.
func newTracePage(v traceView) tracePage {
	p := tracePage{traceView: v, Rows: make([]traceRow, len(v.Spans))}
	total := v.DurationMS
	for i, s := range v.Spans {
		off := millis(s.Start.Sub(v.Start))
		x, w := 0.0, 1000.0
		if total > 0 {
			x, w = off/total*1000, s.DurationMS/total*1000
		}
		w = max(min(w, 1000-x), 2)
		row := traceRow{
			spanRecord: s,
			Indent:     make([]struct{}, min(s.Depth, traceViewMaxIndent)),
			OffsetMS:   off,
			BarX:       strconv.FormatFloat(x, 'f', 1, 64),
			BarW:       strconv.FormatFloat(w, 'f', 1, 64),
			Attrs:      sortedAttrs(s.Attributes),
			Cause:      s.Attributes["vigil.cancel.cause"],
		}
		for _, e := range s.Events {
			row.Events = append(row.Events, eventRow{Name: e.Name, AtMS: millis(e.Time.Sub(v.Start)), Attrs: sortedAttrs(e.Attributes)})
		}
		p.Rows[i] = row
	}
	return p
}

func sortedAttrs(m map[string]string) []keyValue {
	out := make([]keyValue, 0, len(m))
	for k, v := range m {
		out = append(out, keyValue{k, v})
	}
	slices.SortFunc(out, func(a, b keyValue) int {
		switch {
		case a.Key < b.Key:
			return -1
		case a.Key > b.Key:
			return 1
		}
		return 0
	})
	return out
}

// formatMS writes a duration in milliseconds for people.
func formatMS(v float64) string {
	switch {
	case v >= 10000:
		return strconv.FormatFloat(v/1000, 'f', 1, 64) + " s"
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64) + " ms"
	case v >= 1:
		return strconv.FormatFloat(v, 'f', 1, 64) + " ms"
	default:
		return strconv.FormatFloat(v, 'f', 2, 64) + " ms"
	}
}

// formatBytes writes a size in bytes for people, in KiB or MiB.
func formatBytes(n int64) string {
	if n >= 1<<20 {
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
	}
	return strconv.FormatFloat(float64(n)/(1<<10), 'f', 1, 64) + " KiB"
}

// traceViewCSS is the trace view's only style; debugStyles lists it for
// the Content-Security-Policy.
const traceViewCSS = `
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.3em; margin-bottom: .2em; } h2 { font-size: 1.1em; margin-top: 1.4em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; } td, th { padding: 2px 10px 2px 0; text-align: left; vertical-align: top; }
th { color: #666; font-weight: 600; } .mono { font-family: ui-monospace, monospace; font-size: 12px; }
.muted { color: #888; } .ind { display: inline-block; width: 16px; }
.outcome { padding: .5em .8em; border-radius: 4px; margin: .8em 0; font-size: 1.05em; }
.o-ok { background: #e8f5e9; } .o-error { background: #fde7e9; } .o-cancelled, .o-dropped { background: #fff3e0; }
.cause { font-weight: 700; color: #a15c00; } .err { color: #b00020; }
.bar rect { fill: #5c6bc0; } .bar rect.client { fill: #26a69a; } .bar rect.error { fill: #c62828; } .bar rect.cancelled { fill: #ef6c00; }
tr.span td { border-top: 1px solid #eee; padding-top: 4px; }
.detail td { padding-bottom: 6px; } .attrs td { padding: 0 8px 0 0; color: #444; }
`

const traceViewHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Trace {{.TraceID}} · {{.Service}}</title>
<style>` + traceViewCSS + `</style>
</head>
<body>
<div class="muted"><a href="{{or .Base "/"}}">← {{.Service}}</a> · <a href="?format=json">JSON</a></div>
<h1>{{if .Key}}{{.Key}}{{else}}{{.Root}}{{end}}</h1>
<div class="mono muted">trace {{.TraceID}}</div>
<div class="outcome o-{{or .Outcome "ok"}}">
{{- if eq .Outcome "cancelled"}}Cancelled · cause <span class="cause">{{.Detail}}</span>
{{- else if eq .Outcome "dropped"}}Response dropped · reason <span class="cause">{{.Detail}}</span>
{{- else if eq .Outcome "error"}}<span class="err">Failed</span>{{if .Detail}}: <b>{{.Detail}}</b>{{end}}
{{- else if .Outcome}}OK
{{- else}}In progress: its root span has not ended{{end}}
 · {{ms .DurationMS}} · {{len .Spans}} span(s){{if .DroppedSpans}} · {{.DroppedSpans}} span(s) not kept{{end}}
{{- if .Classes}} · kept as {{range $i, $c := .Classes}}{{if $i}}, {{end}}{{$c}}{{end}}{{end}}
</div>

<h2>Spans</h2>
<table>
<tr><th>span</th><th>timeline</th><th>start</th><th>duration</th><th>status</th></tr>
{{range .Rows}}<tr class="span">
<td>{{range .Indent}}<span class="ind"></span>{{end}}<b>{{.Name}}</b> <span class="muted">{{.Kind}}</span></td>
<td><svg class="bar" width="320" height="12" viewBox="0 0 1000 12" preserveAspectRatio="none" role="img" aria-label="from +{{ms .OffsetMS}}, for {{ms .DurationMS}}"><rect x="{{.BarX}}" y="1" width="{{.BarW}}" height="10" class="{{.Kind}}{{if eq .Status "error"}} error{{else if .Cause}} cancelled{{end}}"></rect></svg></td>
<td>+{{ms .OffsetMS}}</td><td>{{ms .DurationMS}}</td>
<td>{{if eq .Status "error"}}<span class="err">error</span>{{if .StatusDescription}}: {{.StatusDescription}}{{end}}{{else}}{{.Status}}{{end}}{{if .Cause}} · cancelled, cause <span class="cause">{{.Cause}}</span>{{end}}</td>
</tr>
<tr class="detail"><td colspan="5">
{{if .Attrs}}<table class="attrs mono">{{range .Attrs}}<tr><td>{{.Key}}</td><td>{{.Value}}</td></tr>{{end}}</table>{{end}}
{{range .Events}}<div class="mono">event <b>{{.Name}}</b> at +{{ms .AtMS}}{{range .Attrs}} {{.Key}}={{.Value}}{{end}}</div>{{end}}
<span class="mono muted">span {{.SpanID}}{{if .ParentSpanID}} · parent {{.ParentSpanID}}{{end}}</span>
</td></tr>
{{end}}</table>

{{if .Siblings}}<h2>Other kept traces of {{.Key}}</h2>
<table>
<tr><th>start</th><th>duration</th><th>outcome</th><th>kept as</th><th>trace</th></tr>
{{range .Siblings}}<tr><td>{{.Start.Format "15:04:05.000"}}</td><td>{{ms .DurationMS}}</td><td>{{.Outcome}}{{if .Detail}}: {{.Detail}}{{end}}</td>
<td>{{range $i, $c := .Classes}}{{if $i}}, {{end}}{{$c}}{{end}}</td><td class="mono"><a href="{{$.Base}}/trace/{{.TraceID}}">{{.TraceID}}</a></td></tr>
{{end}}</table>{{end}}
<p class="muted">Trace ring: {{.Memory.Traces}} traces, {{.Memory.Spans}} spans, {{.Memory.Keys}} method/tool keys; about {{bytes .Memory.Bytes}} of memory, at most {{bytes .Memory.Bound}}.</p>
</body>
</html>
`
