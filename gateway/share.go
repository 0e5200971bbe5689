package gateway

import (
	"github.com/vigil-mcp/vigil/server"
)

// processShare is what one caller may hold of a stdio upstream's
// MaxProcesses once another caller needs one ([Config].ProcessShare).
type processShare struct {
	most   int                          // processes; 0: no share
	caller func(*server.Request) string // Config.Caller
}

// shareOf returns the share cfg sets: ProcessShare of MaxProcesses, at
// least one process.
func shareOf(cfg Config) processShare {
	if cfg.Caller == nil || !(cfg.ProcessShare > 0 && cfg.ProcessShare < 1) {
		return processShare{}
	}
	return processShare{most: max(int(cfg.ProcessShare*float64(cfg.MaxProcesses)), 1), caller: cfg.Caller}
}

// callerOf returns the caller req belongs to; "" without a share.
func (s processShare) callerOf(req *server.Request) string {
	if s.most == 0 {
		return ""
	}
	return s.caller(req)
}

// reclaimFor returns, under m.mu, the link whose process is ended so
// that a new session of caller gets one at the bound, and forgets it:
// one with no call in flight of the caller that holds the most processes
// over its share (another caller), one without a resource subscription
// first, then the one idle the longest; nil when caller holds its share
// already, or no such link is.
func (m *mount) reclaimFor(caller string) *link {
	if m.share.most == 0 {
		return nil
	}
	held := make(map[string]int, len(m.sessions))
	for _, l := range m.sessions {
		held[l.caller]++
	}
	if held[caller] >= m.share.most {
		return nil
	}
	var victim *link
	better := func(l *link) bool {
		switch {
		case victim == nil:
			return true
		case held[l.caller] != held[victim.caller]:
			return held[l.caller] > held[victim.caller]
		case subscribed(l) != subscribed(victim):
			return !subscribed(l)
		default:
			return l.lastUsed.Before(victim.lastUsed)
		}
	}
	for _, l := range m.sessions {
		if l.busy == 0 && l.caller != caller && held[l.caller] > m.share.most && better(l) {
			victim = l
		}
	}
	if victim != nil {
		delete(m.sessions, victim.ss)
		m.log.Info("upstream: a session's process ended for another caller's: its caller held more than its share",
			"upstream", m.up.Name, "session", victim.ss.ID(), "held", held[victim.caller], "share", m.share.most)
	}
	return victim
}

// subscribed reports whether l's downstream session holds a resource
// subscription (its upstream session follows it).
func subscribed(l *link) bool { return len(l.ss.Subscriptions()) > 0 }
