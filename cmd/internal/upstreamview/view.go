// Package upstreamview says what vigil's gateway upstreams are doing, for
// operators: each one's state, a line each, for /readyz ([States]), and
// its state, starts, calls by outcome and mean latency for the live page
// ([Lines], [Line]); names and numbers only. Only cmd/vigil imports it.
package upstreamview

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/vigil-mcp/vigil/gateway"
)

// Of returns g's upstreams' states, none when g is nil (before the
// upstreams are mounted).
func Of(g *gateway.Gateway) []gateway.UpstreamStatus {
	if g == nil {
		return nil
	}
	return g.Upstreams()
}

// States is the state of each of sts, one a line.
func States(sts []gateway.UpstreamStatus) string {
	var b strings.Builder
	for _, st := range sts {
		b.WriteString(st.String() + "\n") // names, states and sandbox classes only
	}
	return b.String()
}

// Lines is the [Line] of each of sts, in order.
func Lines(sts []gateway.UpstreamStatus) []string {
	var lines []string
	for _, st := range sts {
		lines = append(lines, Line(st))
	}
	return lines
}

// maxPinNames bounds the tools Line names that changed since the catalog
// lock was written.
const maxPinNames = 5

// Line is the live page's view of an upstream: its state, whether it is
// a REST API, the tools it serves, its sessions started (restarts among them), the tools changed since the
// catalog lock was written, its calls by outcome and their mean latency;
// names and numbers only, as on /readyz.
func Line(st gateway.UpstreamStatus) string {
	var b strings.Builder
	b.WriteString(st.String())
	if st.OpenAPI {
		b.WriteString(" · REST API")
	}
	if st.Tools > 0 {
		fmt.Fprintf(&b, " · tools %d", st.Tools)
	}
	fmt.Fprintf(&b, " · starts %d", st.Starts)
	if n := len(st.PinChanges); n > 0 { // needs attention: a tool changed since the catalog lock was written
		fmt.Fprintf(&b, " · changed since the catalog lock: %s", strings.Join(st.PinChanges[:min(n, maxPinNames)], ", "))
		if n > maxPinNames {
			fmt.Fprintf(&b, " and %d more", n-maxPinNames)
		}
	}
	if st.Sandbox != "" && st.Sandbox != "off" && st.Sandbox != "network none" {
		b.WriteString(" · sandbox " + st.Sandbox) // its grants: String has its class
	}
	if len(st.EgressRefused) > 0 {
		keys := slices.Sorted(maps.Keys(st.EgressRefused))
		b.WriteString(" · egress refused")
		for i, k := range keys[:min(len(keys), maxPinNames)] {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, " %s %d", k, st.EgressRefused[k])
		}
		if len(keys) > maxPinNames {
			fmt.Fprintf(&b, " and %d more", len(keys)-maxPinNames)
		}
	}
	if len(st.Calls) == 0 {
		return b.String()
	}
	b.WriteString(" · calls")
	sep := " "
	for _, o := range []string{"ok", "tool_error", "error", "cancelled", "upstream_closed", "not_ready"} {
		if n, ok := st.Calls[o]; ok {
			fmt.Fprintf(&b, "%s%s %d", sep, o, n)
			sep = ", "
		}
	}
	if st.MeanLatency > 0 {
		fmt.Fprintf(&b, " · mean %s", st.MeanLatency.Round(10*time.Microsecond))
	}
	return b.String()
}
