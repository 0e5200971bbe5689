package main

import (
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/vigil-mcp/vigil/gateway"
)

// upstreamWaitHTTP is how long vigil waits for its upstreams before it
// serves HTTP: those ready by then are served from the first request,
// the others once they are (clients hear list_changed).
const upstreamWaitHTTP = time.Second

// upstreamWait is how long vigil waits, before serving, for its
// upstreams' first starts: upstreamWaitHTTP over HTTP, where /healthz and
// /readyz must answer from the start; with -stdio, until each is ready or
// has failed once (bounded by -upstream-start-timeout): the client that
// started vigil initializes and lists at once, and not every client
// lists again on list_changed.
func upstreamWait(cfg config) time.Duration {
	if cfg.stdio {
		return cfg.upstreamStartTimeout + time.Second
	}
	return upstreamWaitHTTP
}

// upstreamStopBudget is what -shutdown-grace keeps, after in-flight
// requests, for ending the upstreams: a quarter of it, from 100 ms to
// 2 s. Each stdio upstream's process gets four fifths of that to exit
// once its input is closed (SIGTERM halfway), then it is killed; the rest
// is vigil's own exit. In-flight requests get what is left (drainGrace):
// shutdown ends within -shutdown-grace whatever the upstreams do.
func upstreamStopBudget(grace time.Duration) time.Duration {
	return min(max(grace/4, 100*time.Millisecond), 2*time.Second)
}

// drainGrace is how long in-flight requests may run after SIGTERM: the
// whole -shutdown-grace without upstreams, else what the upstreams'
// stop leaves of it.
func drainGrace(cfg config) time.Duration {
	if len(cfg.upstreams) == 0 {
		return cfg.grace
	}
	return max(cfg.grace-upstreamStopBudget(cfg.grace), 0)
}

// knownToolNames returns names (the tools served, sorted) and the tools
// the flags name (-tool-rate-limits, -auth-policy, -auth-tool-scopes) that
// an upstream not ready yet may serve once it is (NAME_tool with several
// upstreams; any with one), which are checked only against what is served
// now: those are logged, and no longer refused.
func knownToolNames(cfg config, names []string, sts []gateway.UpstreamStatus, logger *slog.Logger) []string {
	var named []string
	for tool := range cfg.toolRateLimits {
		named = append(named, tool)
	}
	if cfg.authPolicy != nil {
		for tool := range cfg.authPolicy.Tools {
			named = append(named, tool)
		}
	}
	for tool := range cfg.authToolScopes {
		named = append(named, tool)
	}
	var pending []string
	for _, tool := range named {
		if _, served := slices.BinarySearch(names, tool); served || slices.Contains(pending, tool) {
			continue
		}
		for _, st := range sts {
			if st.State != gateway.StateReady && (len(sts) == 1 || strings.HasPrefix(tool, st.Name+"_")) {
				pending = append(pending, tool)
				logger.Warn("a tool the flags name is not checked: its upstream is not ready yet", "tool", tool, "upstream", st.Name)
				break
			}
		}
	}
	if len(pending) == 0 {
		return names
	}
	known := append(slices.Clone(names), pending...)
	slices.Sort(known)
	return known
}

// upstreamConfig returns the gateway's configuration of cfg.
func upstreamConfig(cfg config, logger *slog.Logger) gateway.Config {
	idle := cfg.upstreamIdle
	if idle == 0 {
		idle = -1 // never, for the gateway
	}
	return gateway.Config{
		Upstreams: cfg.upstreams, Logger: logger, MaxProcesses: cfg.upstreamMaxProcesses, IdleTimeout: idle, DropUncheckedTools: cfg.upstreamDropUnchecked,
		Required: cfg.upstreamRequired, StartTimeout: cfg.upstreamStartTimeout, StopGrace: upstreamStopBudget(cfg.grace) * 4 / 5,
	}
}
