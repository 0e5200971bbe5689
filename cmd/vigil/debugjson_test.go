package main

import "time"

// The JSON of /debug/vigil?format=json and /debug/vigil/trace/{id}?format=json
// (package debugpage), as the tests of the built vigil read it: the
// fields they look at.

// maxKeptText is the longest text the page keeps of a client's: debugpage
// cuts texts at 256 bytes, on a rune boundary, and marks the cut.
const maxKeptText = 256 + len("…")

// debugSnapshot is the page's JSON.
type debugSnapshot struct {
	Ready         bool           `json:"ready"`
	Exporter      string         `json:"trace_exporter"`
	Stats         []keyRow       `json:"stats"`
	Attention     []attention    `json:"attention"`
	Sessions      []debugSession `json:"sessions"`
	InFlight      []debugRequest `json:"in_flight"`
	Cancellations []cancelEvent  `json:"cancellations"`
	Drops         []dropEvent    `json:"dropped_responses"`
	EndedSessions []endedSession `json:"ended_sessions"`
	TraceSummary  []traceGroup   `json:"trace_summary"`
	Traces        []traceView    `json:"traces"`
	TracesKept    bool           `json:"traces_kept"`
	Memory        struct {
		Total int64 `json:"total_bound_bytes"`
	} `json:"memory"`
}

// principalView is who opened a session or sent a request.
type principalView struct {
	Subject  string `json:"subject,omitempty"`
	ClientID string `json:"client_id,omitempty"`
	Actor    string `json:"actor,omitempty"`
}

// keyRow is one method or tool's counts.
type keyRow struct {
	Key   string `json:"key"`
	Total struct {
		Requests  uint64 `json:"requests"`
		OK        uint64 `json:"ok"`
		Cancelled uint64 `json:"cancelled"`
	} `json:"since_start"`
}

// attention is a row of "needs attention".
type attention struct {
	Kind      string `json:"kind"`
	Key       string `json:"key"`
	RequestID string `json:"request_id,omitempty"`
	Detail    string `json:"detail,omitempty"`
}

// debugSession is a live session.
type debugSession struct {
	ID        string `json:"id"`
	Transport string `json:"transport"`
	Protocol  string `json:"protocol_version"`
	Era       string `json:"era"`
	Client    string `json:"client,omitempty"`
	principalView
}

// debugRequest is a request in flight.
type debugRequest struct {
	SessionID string `json:"session_id"`
	Direction string `json:"direction"`
	ID        string `json:"id"`
	Method    string `json:"method"`
	Name      string `json:"name,omitempty"`
	Key       string `json:"key"`
	principalView
}

// cancelEvent is a cancelled request.
type cancelEvent struct {
	SessionID string `json:"session_id,omitempty"`
	Reason    string `json:"reason"`
	principalView
}

// dropEvent is a request whose response was not written.
type dropEvent struct {
	SessionID string `json:"session_id,omitempty"`
	principalView
}

// endedSession is a session that ended.
type endedSession struct {
	SessionID string `json:"session_id"`
	principalView
}

// traceGroup is the kept traces of one method or tool.
type traceGroup struct {
	Key string `json:"key"`
}

// traceView is a kept trace, as the page's JSON and a trace view's show it.
type traceView struct {
	TraceID string       `json:"trace_id"`
	Key     string       `json:"key,omitempty"`
	Outcome string       `json:"outcome,omitempty"`
	Detail  string       `json:"detail,omitempty"`
	Spans   []spanRecord `json:"spans"`
}

// spanRecord is a span of a kept trace.
type spanRecord struct {
	TraceID    string            `json:"trace_id"`
	Name       string            `json:"name"`
	Kind       string            `json:"kind"`
	Start      time.Time         `json:"start"`
	Status     string            `json:"status"`
	Attributes map[string]string `json:"attributes,omitempty"`
	Depth      int               `json:"depth"`
}
