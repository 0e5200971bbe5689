package gateway

import (
	"errors"
	"time"

	"github.com/vigil-mcp/vigil/gateway/internal/upstream"
	"github.com/vigil-mcp/vigil/transport"
)

// The spare process. A stdio upstream that serves each downstream session
// a process of its own keeps one more process spawned ahead, so that the
// next session's first call does not wait for a program to load (see
// docs/performance.md): that call takes the spare, initializes it
// with its caller's capabilities, and a new spare is spawned behind it.
// The spare is pinged (before initialize, as MCP allows), so that it has
// loaded when taken; it is initialized only then, so that its session
// declares what its own caller can do. It counts within MaxProcesses (no
// spare while every process allowed serves a session), it is ended once
// no session was started for IdleTimeout (the next one starts it again),
// and by Close. A spare that exited meanwhile is dropped when taken.

// wantsSpare reports whether m keeps a spare: a stdio upstream whose
// downstream sessions have processes of their own.
func (m *mount) wantsSpare() bool { return m.up.URL == "" && !m.up.Shared && !m.noSpare }

// refillSpare asks spareLoop to spawn a spare when there is none.
func (m *mount) refillSpare() {
	if !m.wantsSpare() {
		return
	}
	select {
	case m.refill <- struct{}{}:
	default:
	}
}

// spareLoop spawns a spare each time one is asked for, until Close.
func (m *mount) spareLoop() {
	for {
		select {
		case <-m.refill:
			m.fillSpare()
		case <-m.ctx.Done():
			return
		}
	}
}

// roomForSpare reports, under m.mu, whether a spare may be held now: none
// is, the upstream is not closing, fewer sessions and tool views than
// MaxProcesses have a process, and one was started within IdleTimeout.
func (m *mount) roomForSpare() bool {
	return m.spare == nil && m.ctx.Err() == nil && len(m.sessions)+m.viewing < m.maxProcesses &&
		(m.idle <= 0 || m.now().Sub(m.lastClaim) < m.idle)
}

// fillSpare spawns a spare when there is room for one and the upstream is
// ready (one that fails to start is not spawned ahead). A spawn that
// fails is logged; the next session's call spawns its own. While it
// spawns, the spare's room is held (spawning): a tool view takes no
// process of its own in it.
func (m *mount) fillSpare() {
	m.mu.Lock()
	room := m.roomForSpare() && !m.spawning
	if room {
		m.spawning = true
	}
	m.mu.Unlock()
	if !room {
		return
	}
	p := m.spawnSpare()
	m.mu.Lock()
	m.spawning = false
	keep := p != nil && m.roomForSpare()
	if keep {
		m.spare = p
	}
	m.mu.Unlock()
	switch {
	case p == nil:
	case !keep:
		_ = p.Close()
	case m.spawned != nil:
		m.spawned(p.Pid())
	}
}

// spawnSpare spawns a spare of a ready upstream and pings it; nil when
// the upstream is not ready or the spare did not start or answer.
func (m *mount) spawnSpare() *upstream.Process {
	if m.state.load() != StateReady {
		return nil
	}
	p, err := m.startProcess()
	if err != nil {
		m.log.Warn("gateway: the spare process did not start", "upstream", m.up.Name, "error", err)
		return nil
	}
	if !m.pingless.Load() && !m.warm(p) {
		if m.pingless.Load() {
			m.refillSpare() // the next one without a ping
		}
		return nil
	}
	return p
}

// takeSpare returns the spare for a downstream session's link, nil when
// there is none or it exited, and asks for the next one.
func (m *mount) takeSpare() *upstream.Process {
	m.mu.Lock()
	p := m.spare
	m.spare = nil
	m.lastClaim = m.now()
	m.mu.Unlock()
	m.refillSpare()
	if p == nil {
		return nil
	}
	select {
	case <-p.Exited():
		_ = p.Close()
		return nil
	default:
		return p
	}
}

// reapSpare ends the spare, and waits for it, when no session took a
// process for IdleTimeout.
func (m *mount) reapSpare() {
	m.mu.Lock()
	p := m.spare
	if p == nil || m.now().Sub(m.lastClaim) < m.idle {
		m.mu.Unlock()
		return
	}
	m.spare = nil
	m.mu.Unlock()
	m.log.Debug("gateway: spare process idle: ended", "upstream", m.up.Name)
	_ = p.Close()
}

// closeSpare ends the spare, once spareLoop has returned (Close).
func (m *mount) closeSpare() {
	m.mu.Lock()
	p := m.spare
	m.spare = nil
	m.mu.Unlock()
	if p != nil {
		_ = p.Close()
	}
}

// sparePing is the id of the ping sent to a spare: no id of a session's
// (integers), should its answer come late.
var sparePing = transport.StringID("vigil-spare-ping")

// maxBeforePing bounds the messages a spare may send before it answers
// its ping.
const maxBeforePing = 16

// warm pings the spare p and waits for its answer (an error answer too:
// it has loaded), within StartTimeout. A spare that does not answer is
// ended, and the upstream's next spares are kept without a ping.
func (m *mount) warm(p *upstream.Process) bool {
	conn := p.Conn()
	answered := make(chan bool, 1)
	go func() { // ends with the answer, or once p is closed
		if conn.Write(m.ctx, &transport.Request{ID: sparePing, Method: "ping"}) != nil {
			answered <- false
			return
		}
		for range maxBeforePing {
			msg, err := conn.Read(m.ctx)
			if r, ok := msg.(*transport.Response); ok && r.ID == sparePing {
				answered <- true
				return
			}
			if _, invalid := errors.AsType[*transport.DecodeError](err); err != nil && !invalid {
				break
			}
		}
		answered <- false
	}()
	timer := time.NewTimer(m.startTimeout)
	defer timer.Stop()
	ok, got := false, false
	select {
	case ok = <-answered:
		got = true
	case <-timer.C:
	case <-m.ctx.Done():
	}
	if !ok {
		_ = p.Close() // ends the read
		if !got {
			<-answered
		}
		if m.ctx.Err() == nil {
			m.pingless.Store(true)
			m.log.Warn("gateway: the spare process did not answer a ping before initialize: spares are kept without one", "upstream", m.up.Name)
		}
	}
	return ok
}
