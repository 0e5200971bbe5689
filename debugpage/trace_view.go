package debugpage

import (
	"cmp"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"

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
	_ = writeTrace(w, page)
}

// tracePage is what the trace view shows (writeTrace).
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

// writeTrace writes the view of a trace, p.
func writeTrace(out io.Writer, p tracePage) error {
	h := newHTMLWriter(out)
	h.f("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>Trace %s · %s</title>\n<style>%s</style>\n</head>\n<body>\n",
		p.TraceID, p.Service, markup(traceViewCSS))
	h.f("<div class=\"muted\"><a href=\"%s\">← %s</a> · <a href=\"?format=json\">JSON</a></div>\n<h1>%s</h1>\n<div class=\"mono muted\">trace %s</div>\n",
		either(p.Base, "/"), p.Service, either(p.Key, p.Root), p.TraceID)
	h.f("<div class=\"outcome o-%s\">", either(p.Outcome, "ok"))
	switch p.Outcome {
	case "cancelled":
		h.f(`Cancelled · cause <span class="cause">%s</span>`, p.Detail)
	case "dropped":
		h.f(`Response dropped · reason <span class="cause">%s</span>`, p.Detail)
	case "error":
		h.raw(`<span class="err">Failed</span>`)
		if p.Detail != "" {
			h.f(`: <b>%s</b>`, p.Detail)
		}
	case "":
		h.raw("In progress: its root span has not ended")
	default:
		h.raw("OK")
	}
	h.f("\n · %s · %d span(s)", formatMS(p.DurationMS), len(p.Spans))
	if p.DroppedSpans != 0 {
		h.f(" · %d span(s) not kept", p.DroppedSpans)
	}
	if len(p.Classes) > 0 {
		h.f(" · kept as %s", joined(p.Classes))
	}
	h.raw("\n</div>\n\n<h2>Spans</h2>\n<table>\n<tr><th>span</th><th>timeline</th><th>start</th><th>duration</th><th>status</th></tr>\n")
	for _, r := range p.Rows {
		h.raw("<tr class=\"span\">\n<td>" + strings.Repeat(`<span class="ind"></span>`, len(r.Indent)))
		h.f(`<b>%s</b> <span class="muted">%s</span></td>`, r.Name, r.Kind)
		class := r.Kind
		if r.Status == "error" {
			class += " error"
		} else if r.Cause != "" {
			class += " cancelled"
		}
		h.f("\n<td><svg class=\"bar\" width=\"320\" height=\"12\" viewBox=\"0 0 1000 12\" preserveAspectRatio=\"none\" role=\"img\" aria-label=\"from +%s, for %s\"><rect x=\"%s\" y=\"1\" width=\"%s\" height=\"10\" class=\"%s\"></rect></svg></td>\n",
			formatMS(r.OffsetMS), formatMS(r.DurationMS), r.BarX, r.BarW, class)
		h.f("<td>+%s</td><td>%s</td>\n<td>", formatMS(r.OffsetMS), formatMS(r.DurationMS))
		if r.Status == "error" {
			h.raw(`<span class="err">error</span>`)
			if r.StatusDescription != "" {
				h.f(": %s", r.StatusDescription)
			}
		} else {
			h.f("%s", r.Status)
		}
		if r.Cause != "" {
			h.f(` · cancelled, cause <span class="cause">%s</span>`, r.Cause)
		}
		h.raw("</td>\n</tr>\n<tr class=\"detail\"><td colspan=\"5\">\n")
		if len(r.Attrs) > 0 {
			h.raw(`<table class="attrs mono">`)
			for _, kv := range r.Attrs {
				h.f("<tr><td>%s</td><td>%s</td></tr>", kv.Key, kv.Value)
			}
			h.raw("</table>")
		}
		h.raw("\n")
		for _, e := range r.Events {
			h.f(`<div class="mono">event <b>%s</b> at +%s`, e.Name, formatMS(e.AtMS))
			for _, kv := range e.Attrs {
				h.f(" %s=%s", kv.Key, kv.Value)
			}
			h.raw("</div>")
		}
		h.f("\n<span class=\"mono muted\">span %s", r.SpanID)
		if r.ParentSpanID != "" {
			h.f(" · parent %s", r.ParentSpanID)
		}
		h.raw("</span>\n</td></tr>\n")
	}
	h.raw("</table>\n\n")
	if len(p.Siblings) > 0 {
		h.f("<h2>Other kept traces of %s</h2>\n<table>\n<tr><th>start</th><th>duration</th><th>outcome</th><th>kept as</th><th>trace</th></tr>\n", p.Key)
		for _, s := range p.Siblings {
			h.f("<tr><td>%s</td><td>%s</td><td>%s", clock(s.Start), formatMS(s.DurationMS), s.Outcome)
			if s.Detail != "" {
				h.f(": %s", s.Detail)
			}
			h.f("</td>\n<td>%s</td><td class=\"mono\"><a href=\"%s/trace/%s\">%s</a></td></tr>\n", joined(s.Classes), p.Base, s.TraceID, s.TraceID)
		}
		h.raw("</table>")
	}
	m := p.Memory
	h.f("\n<p class=\"muted\">Trace ring: %d traces, %d spans, %d method/tool keys; about %s of memory, at most %s.</p>\n</body>\n</html>\n",
		m.Traces, m.Spans, m.Keys, formatBytes(m.Bytes), formatBytes(m.Bound))
	return h.flush()
}
