package gateway

import (
	"errors"
	"fmt"
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
		if st.State == StateFailing {
			st.RetryIn = m.catalog.retryIn()
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
// failing, and "(not required)" when Health does not require it.
func (st UpstreamStatus) String() string {
	s := "upstream " + st.Name + ": " + string(st.State)
	if st.State == StateFailing {
		s += ", next start in " + retrySeconds(st.RetryIn) + " s"
	}
	if !st.Required {
		s += " (not required)"
	}
	return s
}

// retrySeconds is d in whole seconds, rounded up, at least 1.
func retrySeconds(d time.Duration) string {
	return strconv.FormatInt(max(int64((d+time.Second-1)/time.Second), 1), 10)
}

// notReadyError is why a call was refused without reaching its upstream:
// the upstream was not ready (failing, or this session's own start
// waiting out its backoff, or failed).
type notReadyError struct {
	name    string
	retryIn time.Duration
}

func (e *notReadyError) Error() string {
	return "upstream " + e.name + " is not ready; try again in " + retrySeconds(e.retryIn) + " s"
}

// notReady returns the refusal of a call to the upstream name, which is
// not ready: -32000 (server busy), as the server's other refusals for
// lack of room, with data {"retryAfterSeconds": N}; its hop is counted
// not_ready, not as forwarded.
func notReady(name string, retryIn time.Duration) error {
	e := server.NewError(protocol.CodeServerBusy, &notReadyError{name: name, retryIn: retryIn})
	e.Data = []byte(`{"retryAfterSeconds":` + retrySeconds(retryIn) + `}`)
	return e
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
