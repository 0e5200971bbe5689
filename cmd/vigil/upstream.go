package main

import (
	"flag"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vigil-mcp/vigil/gateway"
	"github.com/vigil-mcp/vigil/internal/upstream"
)

// parseUpstreams turns the values of -upstream (NAME=TARGET: an http://
// or https:// URL, else a command line split as a shell splits words, run
// without one) and -upstream-env (NAME=K=V, for a stdio upstream NAME)
// into the gateway's upstreams, in the order given.
func parseUpstreams(targets, envs []string) ([]gateway.Upstream, error) {
	var ups []gateway.Upstream
	index := map[string]int{}
	for _, t := range targets {
		name, target, ok := strings.Cut(t, "=")
		if !ok || name == "" || strings.TrimSpace(target) == "" {
			return nil, fmt.Errorf("-upstream %q: want NAME=TARGET (a command line, or an http:// or https:// URL)", t)
		}
		if _, dup := index[name]; dup {
			return nil, fmt.Errorf("-upstream %s: named twice", name)
		}
		up := gateway.Upstream{Name: name}
		if strings.HasPrefix(target, "http://") || strings.HasPrefix(target, "https://") {
			if err := checkURL(target); err != nil {
				return nil, fmt.Errorf("-upstream %s: %w", name, err)
			}
			up.URL = target
		} else {
			argv, err := upstream.SplitCommand(target)
			if err != nil {
				return nil, fmt.Errorf("-upstream %s: %w", name, err)
			}
			up.Command = argv
		}
		index[name] = len(ups)
		ups = append(ups, up)
	}
	for _, e := range envs {
		name, kv, _ := strings.Cut(e, "=")
		i, ok := index[name]
		switch {
		case !ok:
			return nil, fmt.Errorf("-upstream-env %q: want NAME=K=V for an -upstream NAME", e)
		case ups[i].URL != "":
			return nil, fmt.Errorf("-upstream-env %s: an HTTP upstream has no environment", name)
		case !strings.Contains(kv, "=") || strings.HasPrefix(kv, "="):
			return nil, fmt.Errorf("-upstream-env %q: want NAME=K=V", e)
		}
		ups[i].Env = append(ups[i].Env, kv)
	}
	return ups, nil
}

// parseUpstreamTools applies -upstream-tools (NAME=PATTERN[,PATTERN]: the
// upstream's tools served, path.Match globs, !glob to leave out) to the
// upstreams; gateway.Mount checks the patterns.
func parseUpstreamTools(ups []gateway.Upstream, values []string) error {
	for _, v := range values {
		name, patterns, _ := strings.Cut(v, "=")
		i := slices.IndexFunc(ups, func(up gateway.Upstream) bool { return up.Name == name })
		switch {
		case i < 0:
			return fmt.Errorf("-upstream-tools %q: want NAME=PATTERN[,PATTERN] for an -upstream NAME", v)
		case patterns == "":
			return fmt.Errorf("-upstream-tools %s: no pattern", name)
		}
		ups[i].Tools = append(ups[i].Tools, strings.Split(patterns, ",")...)
	}
	return nil
}

// parseUpstreamBytes applies the values of flag ([NAME=]BYTES: every
// upstream's bound, *all, or upstream NAME's) to the upstreams with set,
// a NAME's after every upstream's, whatever their order.
func parseUpstreamBytes(ups []gateway.Upstream, flag string, values []string, all *int64, set func(*gateway.Upstream, int64)) error {
	named := map[int]int64{}
	for _, v := range values {
		name, size, ok := strings.Cut(v, "=")
		if !ok {
			name, size = "", v
		}
		n, err := strconv.ParseInt(size, 10, 64)
		if err != nil || n < 1 || n > math.MaxInt32 {
			return fmt.Errorf("%s %q: want [NAME=]BYTES, BYTES from 1 to %d", flag, v, math.MaxInt32)
		}
		if name == "" {
			*all = n
			continue
		}
		i := slices.IndexFunc(ups, func(up gateway.Upstream) bool { return up.Name == name })
		if i < 0 {
			return fmt.Errorf("%s %q: %s is not an -upstream NAME", flag, v, name)
		}
		named[i] = n
	}
	for i := range ups {
		n, ok := named[i]
		if !ok {
			n = *all
		}
		set(&ups[i], n)
	}
	return nil
}

// checkUpstreamSessions checks -upstream-shared, -upstream-max-processes,
// -upstream-idle, -upstream-unchecked-tools, -upstream-required,
// -upstream-start-timeout, -upstream-max-message and -upstream-max-catalog: given (in args or the environment) only with
// -upstream, a positive cap and start timeout, an idle time not negative.
func checkUpstreamSessions(fs *flag.FlagSet, cfg config) error {
	var given []string
	fs.Visit(func(f *flag.Flag) {
		if slices.Contains([]string{"upstream-shared", "upstream-max-processes", "upstream-idle", "upstream-unchecked-tools", "upstream-required", "upstream-start-timeout", "upstream-max-message", "upstream-max-catalog"}, f.Name) {
			given = append(given, "-"+f.Name)
		}
	})
	switch {
	case len(given) > 0 && len(cfg.upstreams) == 0:
		return fmt.Errorf("%s: need -upstream", strings.Join(given, ", "))
	case cfg.upstreamMaxProcesses < 1:
		return fmt.Errorf("-upstream-max-processes %d: want at least 1", cfg.upstreamMaxProcesses)
	case cfg.upstreamIdle < 0:
		return fmt.Errorf("-upstream-idle %v: want 0 (never) or more", cfg.upstreamIdle)
	case cfg.upstreamStartTimeout <= 0:
		return fmt.Errorf("-upstream-start-timeout %v: want more than 0", cfg.upstreamStartTimeout)
	}
	return nil
}

// parseUpstreamRequired parses -upstream-required, NAME[,NAME], each an
// upstream's name; "" is every upstream (nil).
func parseUpstreamRequired(ups []gateway.Upstream, v string) ([]string, error) {
	if v == "" {
		return nil, nil
	}
	names := splitList(v)
	for _, name := range names {
		if !slices.ContainsFunc(ups, func(up gateway.Upstream) bool { return up.Name == name }) {
			return nil, fmt.Errorf("-upstream-required %q: %s is not an -upstream NAME", v, name)
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("-upstream-required %q: want NAME[,NAME]", v)
	}
	return names, nil
}

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
