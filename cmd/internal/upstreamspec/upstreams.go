package upstreamspec

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vigil-mcp/vigil/cmd/internal/flagvalue"
	"github.com/vigil-mcp/vigil/gateway"
	"github.com/vigil-mcp/vigil/internal/cmdline"
)

// maxOpenAPIBytes bounds the OpenAPI description -upstream NAME=openapi:FILE
// reads.
const maxOpenAPIBytes = 64 << 20

// Parse turns the values of -upstream (NAME=TARGET: an http://
// or https:// URL; openapi:FILE, a REST API described by an OpenAPI file,
// read here; else a command line split as a shell splits words, run
// without one) and -upstream-env (NAME=K=V, for a stdio upstream NAME)
// into the gateway's upstreams, in the order given.
func Parse(targets, envs []string) ([]gateway.Upstream, error) {
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
		if file, ok := strings.CutPrefix(target, "openapi:"); ok {
			data, err := readOpenAPI(file)
			if err != nil {
				return nil, fmt.Errorf("-upstream %s: %w", name, err)
			}
			up.OpenAPI = data
		} else if strings.HasPrefix(target, "http://") || strings.HasPrefix(target, "https://") {
			if err := flagvalue.CheckURL(target); err != nil {
				return nil, fmt.Errorf("-upstream %s: %w", name, err)
			}
			up.URL = target
		} else {
			argv, err := cmdline.Split(target)
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
		case ups[i].URL != "" || ups[i].OpenAPI != nil:
			return nil, fmt.Errorf("-upstream-env %s: an HTTP upstream has no environment", name)
		case !strings.Contains(kv, "=") || strings.HasPrefix(kv, "="):
			return nil, fmt.Errorf("-upstream-env %q: want NAME=K=V", e)
		}
		ups[i].Env = append(ups[i].Env, kv)
	}
	return ups, nil
}

// readOpenAPI reads the OpenAPI description of -upstream NAME=openapi:FILE,
// at most maxOpenAPIBytes of it.
func readOpenAPI(file string) ([]byte, error) {
	if strings.HasPrefix(file, "http://") || strings.HasPrefix(file, "https://") {
		return nil, errors.New("openapi: takes a file (a URL is not fetched yet): download the description first")
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	data, err := io.ReadAll(io.LimitReader(f, maxOpenAPIBytes+1))
	switch {
	case err != nil:
		return nil, err
	case len(data) > maxOpenAPIBytes:
		return nil, fmt.Errorf("openapi: %s is over %d MiB", file, maxOpenAPIBytes>>20)
	case len(data) == 0:
		return nil, fmt.Errorf("openapi: %s is empty", file)
	}
	return data, nil
}

// ApplyTools applies -upstream-tools (NAME=PATTERN[,PATTERN]: the
// upstream's tools served, path.Match globs, !glob to leave out) to the
// upstreams; gateway.Mount checks the patterns.
func ApplyTools(ups []gateway.Upstream, values []string) error {
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

// ApplyBytes applies the values of flag ([NAME=]BYTES: every
// upstream's bound, *all, or upstream NAME's) to the upstreams with set,
// a NAME's after every upstream's, whatever their order.
func ApplyBytes(ups []gateway.Upstream, flag string, values []string, all *int64, set func(*gateway.Upstream, int64)) error {
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

// Required parses -upstream-required, NAME[,NAME], each an
// upstream's name; "" is every upstream (nil).
func Required(ups []gateway.Upstream, v string) ([]string, error) {
	if v == "" {
		return nil, nil
	}
	names := flagvalue.SplitList(v)
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

// CheckSessions refuses the gateway's flags (their names in given, as
// given in the arguments or the environment) without an upstream, an
// -upstream-max-processes below 1, a negative -upstream-idle and an
// -upstream-start-timeout not above 0.
func CheckSessions(given func(name string) bool, upstreams, maxProcesses int, idle, startTimeout time.Duration) error {
	var named []string
	for _, name := range []string{"catalog", "catalog-search", "catalog-lock", "catalog-lock-write", "upstream-idle", "upstream-max-catalog", "upstream-max-message", "upstream-max-processes", "upstream-required", "upstream-shared", "upstream-start-timeout", "upstream-unchecked-tools"} {
		if given(name) {
			named = append(named, "-"+name)
		}
	}
	switch {
	case len(named) > 0 && upstreams == 0:
		return fmt.Errorf("%s: need -upstream", strings.Join(named, ", "))
	case maxProcesses < 1:
		return fmt.Errorf("-upstream-max-processes %d: want at least 1", maxProcesses)
	case idle < 0:
		return fmt.Errorf("-upstream-idle %v: want 0 (never) or more", idle)
	case startTimeout <= 0:
		return fmt.Errorf("-upstream-start-timeout %v: want more than 0", startTimeout)
	}
	return nil
}

// UncheckedTools is the flag.Func of -upstream-unchecked-tools: serve
// or drop, setting *drop.
func UncheckedTools(drop *bool) func(string) error {
	return func(v string) error {
		switch v {
		case "serve", "drop":
			*drop = v == "drop"
			return nil
		}
		return fmt.Errorf("%q: want serve or drop", v)
	}
}
