package gateway

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// State is the state of one upstream, as [Gateway.Upstreams], Health and
// the metric mcp_gateway_upstream_state (its state label) report it: the
// state of the session the gateway keeps with it for listing.
type State string

// The states of an upstream.
const (
	// StateStarting: a start is under way (the first, or one after its
	// session went): spawn, initialize and listing, bounded by
	// [Config].StartTimeout.
	StateStarting State = "starting"
	// StateReady: the upstream is initialized and listed, and what it
	// offers is registered.
	StateReady State = "ready"
	// StateFailing: its last start failed; the next waits out a backoff
	// (1 s, doubling up to 30 s), and its calls are refused meanwhile.
	StateFailing State = "failing"
	// StateStopped: [Gateway.Close] has run.
	StateStopped State = "stopped"
)

// UpstreamStatus is what [Gateway.Upstreams] reports of one upstream. It
// holds no URL, command line or credential, only the name the operator
// gave.
type UpstreamStatus struct {
	Name     string
	State    State
	Required bool          // Health requires it to be ready ([Config].Required)
	RetryIn  time.Duration // for StateFailing: the time left before its next start
	// Calls counts the calls forwarded since Mount, by outcome as
	// mcp_gateway_upstream_calls_total says it (ok, tool_error, error,
	// cancelled, upstream_closed, not_ready); outcomes never seen are
	// absent. MeanLatency is the mean duration of those sent, and Starts
	// the sessions started (for stdio, processes): more than the one the
	// listing holds are restarts or a caller's own sessions. They are not
	// in String, which /readyz shows.
	Calls       map[string]int64
	MeanLatency time.Duration
	Starts      int64
	// PinChanges names, as served, the tools of its last listing whose
	// definition is not the one the catalog lock approved (a pinned
	// upstream: see [Catalog.WithLock]), sorted; not in String.
	PinChanges []string
	// Sandbox is a stdio upstream's profile (the sandbox's profile), empty for
	// an HTTP one (String says its class only); EgressRefused counts what
	// its egress proxy refused, by host and reason ("HOST REASON"), not in
	// String.
	Sandbox       string
	EgressRefused map[string]int64
	// Tools counts the tools it serves now (its last listing, after the
	// tool filter and the catalog); not in String. OpenAPI marks a REST
	// API upstream ([Upstream].OpenAPI).
	Tools   int
	OpenAPI bool
}

// stateOf holds a mount's State, safe for concurrent use.
type stateOf struct {
	mu      sync.Mutex
	st      State         // "" before the first change: StateStarting
	changed chan struct{} // closed at the next change; nil until watched
}

// watch returns the state, and a channel closed when it changes.
func (s *stateOf) watch() (State, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.changed == nil {
		s.changed = make(chan struct{})
	}
	return cmpState(s.st), s.changed
}

func (s *stateOf) load() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return cmpState(s.st)
}

// cmpState is st, or StateStarting for "".
func cmpState(st State) State {
	if st == "" {
		return StateStarting
	}
	return st
}

// setState records the upstream's state; once it is stopped it stays so.
func (m *mount) setState(st State) {
	s := &m.state
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st == StateStopped || s.st == st {
		return
	}
	s.st = st
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
}

// settle tells Mount that the upstream's first start is over, ready or
// failed.
func (m *mount) settle() { m.settleOnce.Do(func() { close(m.settled) }) }

// Upstreams returns the state of each upstream, in the order of
// [Config].Upstreams. It is safe for concurrent use and does no I/O.
func (g *Gateway) Upstreams() []UpstreamStatus {
	out := make([]UpstreamStatus, 0, len(g.mounts))
	for _, m := range g.mounts {
		st := UpstreamStatus{Name: m.up.Name, State: m.state.load(), Required: m.required, Starts: m.starts.Load()}
		m.calls.fill(&st)
		g.mu.Lock()
		if m.cat != nil {
			st.PinChanges = slices.Clone(m.cat.changed) // pinning.go
			st.Tools = len(m.cat.tools)
		}
		st.OpenAPI = m.rest != nil
		g.mu.Unlock()
		if st.State == StateFailing {
			st.RetryIn = m.catalog.retryIn()
		}
		if len(m.up.Command) > 0 {
			st.Sandbox = m.up.Sandbox.profile()
			m.sandbox.refusals(func(host, reason string, n int64) {
				if st.EgressRefused == nil {
					st.EgressRefused = map[string]int64{}
				}
				st.EgressRefused[host+" "+reason] = n
			})
		}
		out = append(out, st)
	}
	return out
}

// Health returns nil while every upstream [Config].Required names is
// ready, else an error whose text names each upstream with its state,
// one a line (for /readyz: names and states only, never a URL, command
// or error text, which the log has). It does no I/O.
func (g *Gateway) Health() error {
	var lines []string
	down := false
	for _, st := range g.Upstreams() {
		down = down || (st.Required && st.State != StateReady)
		lines = append(lines, st.String())
	}
	if !down {
		return nil
	}
	return errors.New(strings.Join(lines, "\n"))
}

// String is "upstream NAME: STATE", with the time to the next start when
// failing, "(not required)" when Health does not require it, and a stdio
// upstream's sandbox by its class: "(sandbox none)", proxy (hosts
// through the egress proxy), all (the gateway's network) or off; never
// a path or a host.
func (st UpstreamStatus) String() string {
	s := "upstream " + st.Name + ": " + string(st.State)
	if st.State == StateFailing {
		s += ", next start in " + retrySeconds(st.RetryIn) + " s"
	}
	if !st.Required {
		s += " (not required)"
	}
	if st.Sandbox != "" {
		s += " (sandbox " + sandboxClass(st.Sandbox) + ")"
	}
	return s
}

// retrySeconds is d in whole seconds, rounded up, at least 1.
func retrySeconds(d time.Duration) string {
	return strconv.FormatInt(max(int64((d+time.Second-1)/time.Second), 1), 10)
}

// notReadyError is why a call was refused without reaching its upstream:
// the upstream was not ready (failing, or this session's own start
// waiting out its backoff, or failed), or, with a state, had not listed
// its tools yet (awaitTool).
type notReadyError struct {
	name    string
	state   State // "": not ready; else the state of an upstream not listed yet
	retryIn time.Duration
}

func (e *notReadyError) Error() string {
	if e.state != "" {
		return "upstream " + e.name + " is " + string(e.state) + ": its tools are not listed yet; try again in " + retrySeconds(e.retryIn) + " s"
	}
	return "upstream " + e.name + " is not ready; try again in " + retrySeconds(e.retryIn) + " s"
}

// notReady returns the refusal of a call to the upstream name, which is
// not ready: -32000 (server busy), as the server's other refusals for
// lack of room, with data {"retryAfterSeconds": N}; its hop is counted
// not_ready, not as forwarded.
func notReady(name string, retryIn time.Duration) error {
	return refusal(&notReadyError{name: name, retryIn: retryIn})
}

// refusal is the -32000 error of e, with data {"retryAfterSeconds": N}.
func refusal(e *notReadyError) error {
	se := server.NewError(protocol.CodeServerBusy, e)
	se.Data = []byte(`{"retryAfterSeconds":` + retrySeconds(e.retryIn) + `}`)
	return se
}

// awaitTool is the server's tool wait (server.Server.SetToolWait): a call
// of a tool that is not registered, whose name is of an upstream (its
// NAME_ prefix; any name when there is one upstream) that has not listed
// its tools yet, waits for its first listing, for at most StartTimeout,
// and is then looked up again; a call of a name of no upstream, or of one
// listed, does not wait. While the upstream is failing (its first start
// failed: the next waits out its backoff), or once the wait is over with
// the upstream still starting, the call is refused (-32000, naming the
// upstream and its state, with data {"retryAfterSeconds": N}), as a call
// of a tool that exists a moment later must not be answered as unknown.
func (g *Gateway) awaitTool(ctx context.Context, name string) error {
	m := g.mountOfTool(name)
	if m == nil || m.listed.Load() {
		return nil
	}
	timer := time.NewTimer(m.startTimeout)
	defer timer.Stop()
	for {
		st, changed := m.state.watch()
		switch {
		case m.listed.Load(), st == StateReady: // registered before it was ready (keepCatalog)
			return nil
		case st == StateFailing:
			return refusal(&notReadyError{name: m.up.Name, state: st, retryIn: m.catalog.retryIn()})
		case st == StateStopped:
			return refusal(&notReadyError{name: m.up.Name, state: st, retryIn: time.Second})
		}
		select {
		case <-changed:
		case <-timer.C:
			return refusal(&notReadyError{name: m.up.Name, state: StateStarting, retryIn: time.Second})
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// mountOfTool returns the upstream a tool's name is of, by its prefix
// (the only upstream when there is one), nil for none.
func (g *Gateway) mountOfTool(name string) *mount {
	if len(g.mounts) == 1 {
		return g.mounts[0]
	}
	prefix, _, ok := strings.Cut(name, "_") // an upstream's name holds no '_' (checkUpstreams)
	if !ok {
		return nil
	}
	for _, m := range g.mounts {
		if m.up.Name == prefix {
			return m
		}
	}
	return nil
}

// checkRequired checks that required names upstreams of ups.
func checkRequired(ups []Upstream, required []string) error {
	for _, name := range required {
		found := false
		for _, up := range ups {
			found = found || up.Name == name
		}
		if !found {
			return fmt.Errorf("gateway: required upstream %q is not one of the upstreams", name)
		}
	}
	return nil
}
