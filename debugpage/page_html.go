package debugpage

import (
	"io"
	"net/url"
	"strconv"
	"time"
)

// debugHTMLRows is how many sessions and requests in flight the HTML
// lists, at most (the oldest requests, the oldest sessions); the JSON form
// has them all.
const debugHTMLRows = 100

// debugView is what the page shows (writePage).
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

// clock writes a time of day to the millisecond.
func clock(t time.Time) string { return t.Format("15:04:05.000") }

// shortID writes an id of more than 12 characters as its first 12 and an
// ellipsis.
func shortID(id string) string {
	if len(id) > 12 {
		return id[:12] + "…"
	}
	return id
}

// fmtRate writes a rate per second.
func fmtRate(v float64) string {
	if v >= 10 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// fmtNum writes a coordinate of a chart.
func fmtNum(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// filtered reports whether the view is narrowed.
func filtered(f debugFilter) bool { return f.Session != "" || f.Key != "" || f.Outcome != "" }

// countClass returns the class of a count cell: cls when n is not zero,
// zero otherwise.
func countClass(n uint64, cls string) string {
	if n != 0 {
		return cls
	}
	return "zero"
}

// writePage writes the page of v.
func writePage(out io.Writer, v debugView) error {
	h := newHTMLWriter(out)
	q := v.Query
	h.raw("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
	if v.Refresh != 0 {
		h.f("<meta http-equiv=\"refresh\" content=\"%d\">", v.Refresh)
	}
	title := v.Service
	if v.Version != "" {
		title += " " + v.Version
	}
	h.f("\n<title>%s</title>\n<link rel=\"stylesheet\" href=\"%s/style.css\">\n<link rel=\"icon\" href=\"%s/favicon.svg\" type=\"image/svg+xml\">\n</head>\n<body>\n<header>\n", title, v.Base, v.Base)
	h.f("<h1>%s</h1>\n<span class=\"status\">Vigil %s · %s · up %s ·\n", title, v.VigilVersion, clock(v.Now), formatMS(v.UptimeMS))
	if v.Ready {
		h.raw(`<span class="ok">ready</span>`)
	} else {
		h.raw(`<span class="warn">draining</span>`)
	}
	h.f(" ·\ntraces: %s · ", v.Exporter)
	if v.MetricsURL != "" {
		h.f(`<a href="%s">%s</a> · `, safeURL(v.MetricsURL), v.MetricsURL)
	}
	h.f("<a id=\"json-link\" href=\"%s\">JSON</a> ·\n", debugLink(q, "format", "json"))
	if v.Refresh != 0 {
		h.f(`refreshes every %d s (<a href="%s">stop</a>)`, v.Refresh, debugLink(q, "refresh", "0"))
	} else {
		h.f(`<a href="%s">auto-refresh</a>`, debugLink(q, "refresh", ""))
	}
	h.f(" ·\nmemory bound %s", fmtBytes(v.Memory.Total))
	if v.Memory.RingBound == 0 {
		h.raw(" + trace ring")
	}
	h.raw("</span>\n")
	for _, st := range v.Status {
		h.f("<div class=\"status\">%s</div>\n", st)
	}
	h.raw("</header>\n<nav class=\"filters\" id=\"filters\">show:\n")
	h.f("<a href=\"%s\">all</a>\n", debugLink(q, "outcome", ""))
	for _, o := range [][2]string{{"error", "errors"}, {"cancelled", "cancelled"}, {"dropped", "dropped"}, {"slow", "slow"}} {
		h.f("<a href=\"%s\">%s</a>\n", debugLink(q, "outcome", o[0]), o[1])
	}
	if filtered(v.Filter) {
		h.raw("<span class=\"filter-on\" id=\"filter-on\">filtered:\n")
		if v.Filter.Session != "" {
			h.f(` session <span class="mono">%s</span>`, shortID(v.Filter.Session))
		}
		h.raw("\n")
		if v.Filter.Key != "" {
			h.f(" %s", v.Filter.Key)
		}
		h.raw("\n")
		if v.Filter.Outcome != "" {
			h.f(" %s", v.Filter.Outcome)
		}
		h.f("\n· <a href=\"%s?refresh=%d\">clear</a></span>", v.Base, v.Refresh)
	}
	h.raw("\n</nav>\n\n")
	writeAttention(h, v)
	h.raw("\n<div class=\"grid\">\n")
	writeStats(h, v)
	writeCharts(h, v.Charts)
	h.raw("</div>\n\n")
	writeInFlight(h, v)
	writeSessions(h, v)
	writeKeptTraces(h, v)
	writeEnded(h, v)
	m := v.Memory
	h.f("<footer id=\"memory\">Memory bound of this page's data: %s —\nrequest stats %s (in use %s), event log %s,\ntrace ring ",
		fmtBytes(m.Total), fmtBytes(m.StatsBound), fmtBytes(m.StatsInUse), fmtBytes(m.EventsBound))
	if m.RingBound != 0 {
		h.f("%s", fmtBytes(m.RingBound))
	} else {
		h.raw("not stated")
	}
	h.f(" (%d traces).\nRead-only; no script.</footer>\n</body>\n</html>\n", m.RingTraces)
	return h.flush()
}

func writeAttention(h *htmlWriter, v debugView) {
	h.f("<section id=\"attention\">\n<h2>Needs attention (%d)</h2>\n", len(v.Attention))
	if len(v.Attention) == 0 {
		h.raw(`<p class="muted">Nothing: no error, cancellation, dropped response or kept trace`)
		if filtered(v.Filter) {
			h.raw(" in this view")
		}
		h.raw(".</p>\n</section>\n")
		return
	}
	h.raw("<table>\n<tr><th>what</th><th>at</th><th>method / tool</th><th class=\"n\">took</th><th>cause</th><th>trace</th><th>session</th><th>id</th><th>principal</th><th>detail</th></tr>\n")
	for _, a := range v.Attention {
		h.f("<tr class=\"att att-%s\"><td><span class=\"kind kind-%s\">%s</span></td><td>%s</td>\n", a.Kind, a.Kind, a.Kind, clock(a.Time))
		h.f("<td class=\"a-key\"><a href=\"%s\">%s</a></td><td class=\"n a-took\">%s</td><td class=\"mono a-reason\">%s</td>\n",
			debugLink(v.Query, "key", a.Key), a.Key, formatMS(a.DurationMS), either(a.Reason, "—"))
		if a.TraceURL != "" {
			h.f(`<td><a class="trace-link mono" href="%s">%s</a></td>`, safeURL(a.TraceURL), shortID(a.TraceID))
		} else {
			h.raw(`<td><span class="muted">—</span></td>`)
		}
		if a.SessionID != "" {
			h.f("\n<td class=\"mono\"><a href=\"%s\" title=\"%s\">%s</a></td>\n", debugLink(v.Query, "session", a.SessionID), a.SessionID, shortID(a.SessionID))
		} else {
			h.raw("\n<td class=\"mono\">—</td>\n")
		}
		h.f(`<td class="mono a-id">%s</td><td>`, a.RequestID)
		writePrincipal(h, a.principalView)
		h.f("</td><td class=\"detail mono\" title=\"%s\">%s</td></tr>\n", a.Detail, a.Detail)
	}
	h.raw("</table>\n</section>\n")
}

func writeStats(h *htmlWriter, v debugView) {
	h.raw("<section id=\"methods\">\n<h2>Methods and tools</h2>\n")
	if len(v.Stats) == 0 {
		h.raw(`<p class="muted">No request yet`)
		if filtered(v.Filter) {
			h.raw(" in this view")
		}
		h.raw(".</p>\n</section>\n")
		return
	}
	q := v.Query
	sortLink := func(col, name string) { h.f(`<a href="%s">%s</a>`, debugLink(q, "sort", col), name) }
	h.raw("<table id=\"stats\">\n<tr><th></th><th class=\"group\" colspan=\"7\">last minute</th><th class=\"group\" colspan=\"5\">since start</th></tr>\n<tr><th>")
	sortLink("key", "method / tool")
	for _, c := range [][2]string{{"rate", "req/s"}, {"p50", "p50"}, {"p95", "p95"}, {"p99", "p99"}, {"errors", "errors"}, {"cancelled", "cancelled"}, {"dropped", "dropped"}, {"total", "requests"}} {
		h.raw(`</th><th class="n">`)
		sortLink(c[0], c[1])
	}
	h.raw("</th><th class=\"n\">p99</th><th class=\"n\">errors</th><th class=\"n\">cancelled</th><th class=\"n\">dropped</th></tr>\n")
	for _, r := range v.Stats {
		m, t := r.Minute, r.Total
		h.f("<tr class=\"stat-row\" data-key=\"%s\"><td><a href=\"%s\">%s</a></td>\n", r.Key, debugLink(q, "key", r.Key), r.Key)
		h.f(`<td class="n">%s</td><td class="n">%s</td><td class="n">%s</td><td class="n">%s</td>`, fmtRate(m.RatePerSec), formatMS(m.P50MS), formatMS(m.P95MS), formatMS(m.P99MS))
		h.f("\n<td class=\"n c-errors %s\">%d</td><td class=\"n c-cancelled %s\">%d</td><td class=\"n c-dropped %s\">%d</td>\n",
			countClass(m.Errors, "err"), m.Errors, countClass(m.Cancelled, "warn"), m.Cancelled, countClass(m.Dropped, "warn"), m.Dropped)
		h.f("<td class=\"n c-total\">%d</td><td class=\"n\">%s</td><td class=\"n t-errors %s\">%d</td>\n", t.Requests, formatMS(t.P99MS), countClass(t.Errors, "err"), t.Errors)
		h.f("<td class=\"n t-cancelled %s\">%d</td><td class=\"n t-dropped %s\">%d</td></tr>\n", countClass(t.Cancelled, "warn"), t.Cancelled, countClass(t.Dropped, "warn"), t.Dropped)
	}
	h.raw("</table>\n<p class=\"muted note\">errors: JSON-RPC errors and isError results. cancelled: by client, transport,<br>shutdown or timeout. A heading sorts; a name filters.</p>\n</section>\n")
}

func writeCharts(h *htmlWriter, c debugCharts) {
	h.raw("\n<section id=\"charts\">\n<h2>Last 10 minutes</h2>\n")
	for _, l := range []lineChart{c.Rate, c.P99} {
		h.f("<div class=\"chart-title\">%s · max %s</div>\n", l.Title, l.Max)
		h.f("<svg class=\"chart\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"%s\">\n", l.W, l.H, l.W, l.H, l.Title)
		h.f("<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#fafafa\" stroke=\"#ddd\"/>\n", l.W, l.H)
		h.f("<polygon points=\"%s\" fill=\"#bbdefb\"/>\n<polyline points=\"%s\" fill=\"none\" stroke=\"#1565c0\" stroke-width=\"1.2\"/>\n</svg>\n", l.Area, l.Points)
	}
	o := c.Outcomes
	h.f("<div class=\"chart-title\">%s · max %s</div>\n", o.Title, o.Max)
	h.f("<svg class=\"chart\" id=\"chart-outcomes\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"%s\">\n", o.W, o.H, o.W, o.H, o.Title)
	h.f("<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#fafafa\" stroke=\"#ddd\"/>\n", o.W, o.H)
	for _, r := range o.Rects {
		h.f(`<rect x="%s" y="%s" width="%s" height="%s" fill="%s"><title>%s</title></rect>`, fmtNum(r.X), fmtNum(r.Y), fmtNum(r.W), fmtNum(r.H), r.Fill, r.Title)
	}
	h.raw("\n</svg>\n<div class=\"legend\">")
	for _, l := range o.Legend {
		h.f(`<span class="%s">■ %s %d</span> `, l.Class, l.Name, l.Count)
	}
	if len(o.Legend) == 0 {
		h.raw(`<span class="muted">no request in the last 10 minutes</span>`)
	}
	h.raw("</div>\n</section>\n")
}

func writeInFlight(h *htmlWriter, v debugView) {
	h.f("<section id=\"inflight\">\n<h2>In flight (%d), oldest first</h2>\n", len(v.InFlight))
	if len(v.InFlight) == 0 {
		h.raw("<p class=\"muted\">Nothing in flight.</p>\n</section>\n\n")
		return
	}
	h.raw("<table>\n<tr><th class=\"n\">running for</th><th>method / tool</th><th>direction</th><th>id</th><th>session</th><th>principal</th></tr>\n")
	for _, r := range v.InFlight[:min(len(v.InFlight), debugHTMLRows)] {
		h.f(`<tr><td class="n">%s</td><td><a href="%s">%s</a></td><td>%s</td><td class="mono">%s</td>`, formatMS(r.AgeMS), debugLink(v.Query, "key", r.Key), r.Key, r.Direction, r.ID)
		h.f("\n<td class=\"mono\"><a href=\"%s\" title=\"%s\">%s</a></td><td>", debugLink(v.Query, "session", r.SessionID), r.SessionID, shortID(r.SessionID))
		writePrincipal(h, r.principalView)
		h.raw("</td></tr>\n")
	}
	h.raw("</table>")
	if more := len(v.InFlight) - debugHTMLRows; more > 0 {
		h.f(`<p class="muted">and %d more: see the JSON form, or filter by session.</p>`, more)
	}
	h.raw("\n</section>\n\n")
}

func writeSessions(h *htmlWriter, v debugView) {
	h.f("<section id=\"sessions\">\n<h2>Sessions (%d)</h2>\n", len(v.Sessions))
	if len(v.Sessions) == 0 {
		h.raw("<p class=\"muted\">No session.</p>\n</section>\n\n")
		return
	}
	h.raw("<table>\n<tr><th>id</th><th>transport</th><th>era</th><th>protocol</th><th>client</th><th>principal</th><th>age</th><th class=\"n\">in flight</th></tr>\n")
	for _, s := range v.Sessions[:min(len(v.Sessions), debugHTMLRows)] {
		h.f(`<tr><td class="mono"><a href="%s" title="%s">%s</a></td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>`,
			debugLink(v.Query, "session", s.ID), s.ID, shortID(s.ID), either(s.Transport, "—"), s.Era, either(s.Protocol, "—"), either(s.Client, "—"))
		writePrincipal(h, s.principalView)
		h.f("</td><td>%s</td><td class=\"n\">%d</td></tr>\n", formatMS(s.AgeMS), s.InFlight)
	}
	h.raw("</table>")
	if more := len(v.Sessions) - debugHTMLRows; more > 0 {
		h.f(`<p class="muted">and %d more: see the JSON form.</p>`, more)
	}
	h.raw("\n</section>\n\n")
}

func writeKeptTraces(h *htmlWriter, v debugView) {
	h.f("<section id=\"traces\">\n<h2>Kept traces (%d), by method / tool</h2>\n", v.TracesKeptCount)
	switch {
	case !v.TracesKept:
		h.f("<p class=\"muted\">Spans go to %s; they are not kept here. Leave OTEL_TRACES_EXPORTER and OTEL_EXPORTER_OTLP_ENDPOINT unset to keep recent traces in memory.</p>\n", v.Exporter)
	case len(v.TraceSummary) == 0:
		h.raw(`<p class="muted">No trace`)
		if filtered(v.Filter) {
			h.raw(" in this view")
		} else {
			h.raw(" yet: call a tool")
		}
		h.raw(".</p>")
	default:
		h.raw("<table>\n<tr><th>method / tool</th><th class=\"n\">traces</th><th class=\"n\">errors</th><th class=\"n\">cancelled</th><th class=\"n\">dropped</th><th class=\"n\">slowest</th><th>latest</th></tr>\n")
		for _, g := range v.TraceSummary {
			h.f(`<tr><td><a href="%s">%s</a></td><td class="n">%d</td><td class="n">%d</td><td class="n">%d</td><td class="n">%d</td>`, debugLink(v.Query, "key", g.Key), g.Key, g.Count, g.Errors, g.Cancelled, g.Dropped)
			h.f("\n<td class=\"n\"><a href=\"%s\">%s</a></td><td><a class=\"mono\" href=\"%s\">%s</a></td></tr>\n", safeURL(g.SlowestURL), formatMS(g.MaxMS), safeURL(g.LatestURL), shortID(g.LatestID))
		}
		h.raw("</table>")
	}
	h.raw("\n</section>\n\n")
}

func writeEnded(h *htmlWriter, v debugView) {
	h.f("<section id=\"ended\">\n<h2>Recently ended sessions (%d)</h2>\n", len(v.EndedSessions))
	if len(v.EndedSessions) == 0 {
		h.raw("<p class=\"muted\">None yet.</p>\n</section>\n\n")
		return
	}
	h.raw("<table>\n<tr><th>at</th><th>session</th><th>principal</th><th>transport</th><th>protocol</th><th>lasted</th><th>reason</th><th>cause</th></tr>\n")
	for _, e := range v.EndedSessions {
		h.f(`<tr><td>%s</td><td class="mono" title="%s">%s</td><td>`, clock(e.Time), e.SessionID, shortID(e.SessionID))
		writePrincipal(h, e.principalView)
		h.f("</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td class=\"mono detail\" title=\"%s\">%s</td></tr>\n",
			either(e.Transport, "—"), e.Protocol, formatMS(e.DurationMS), e.Reason, e.Cause, e.Cause)
	}
	h.raw("</table>\n</section>\n\n")
}

// writePrincipal writes who made a request or opened a session: the
// actor on behalf of the subject, and the client when it is not the
// subject; a dash for nobody.
func writePrincipal(h *htmlWriter, p principalView) {
	if p.Subject == "" {
		h.raw(`<span class="muted">—</span>`)
		return
	}
	if p.Actor != "" {
		h.f(`<span class="mono">%s</span> <span class="muted">on behalf of</span> `, p.Actor)
	}
	h.f(`<span class="mono">%s</span>`, p.Subject)
	if p.ClientID != "" && p.ClientID != p.Subject {
		h.f(` <span class="muted">(client <span class="mono">%s</span>)</span>`, p.ClientID)
	}
}
