package main

import (
	"flag"
	"fmt"
	"log/slog"
	"slices"
	"strings"

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

// checkUpstreamSessions checks -upstream-shared, -upstream-max-processes,
// -upstream-idle and -upstream-unchecked-tools: given (in args or the environment) only with
// -upstream, a positive cap, an idle time not negative.
func checkUpstreamSessions(fs *flag.FlagSet, cfg config) error {
	var given []string
	fs.Visit(func(f *flag.Flag) {
		if slices.Contains([]string{"upstream-shared", "upstream-max-processes", "upstream-idle", "upstream-unchecked-tools"}, f.Name) {
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
	}
	return nil
}

// upstreamConfig returns the gateway's configuration of cfg.
func upstreamConfig(cfg config, logger *slog.Logger) gateway.Config {
	idle := cfg.upstreamIdle
	if idle == 0 {
		idle = -1 // never, for the gateway
	}
	return gateway.Config{Upstreams: cfg.upstreams, Logger: logger, MaxProcesses: cfg.upstreamMaxProcesses, IdleTimeout: idle, DropUncheckedTools: cfg.upstreamDropUnchecked}
}
