package gateway

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/vigil-mcp/vigil/internal/egress"
	"github.com/vigil-mcp/vigil/internal/sandbox"
)

// The bounds of a sandbox whose [Sandbox] leaves them 0.
const (
	defaultSandboxMemory    = 1 << 30 // bytes of data (RLIMIT_DATA) of each process
	defaultSandboxProcesses = 256     // processes and threads, together
	defaultSandboxOpenFiles = 1024    // of each process
)

// Sandbox is how a stdio upstream's processes are confined: docs/security.md
// says what each mechanism stops and what it does not. The zero value is
// the profile "none", the default: the system's files and the command's
// own read-only, a private directory of its own (its HOME and TMPDIR)
// read-write, no network, and the default bounds. A kernel or container
// that lacks a mechanism it needs fails the upstream's start, naming the
// missing feature; an upstream never runs unconfined unless Off says so.
//
// A program that mounts sandboxed upstreams must call [SandboxMain] first
// in its main.
type Sandbox struct {
	// Off runs the upstream unconfined, as the gateway's own user with
	// everything it can reach (logged as a warning at start).
	Off bool
	// Read are paths the upstream may read beneath.
	Read []string
	// Write are paths it may read and write beneath.
	Write []string
	// Network are the HOST:PORT it may reach through the gateway's egress
	// proxy (HTTP_PROXY and HTTPS_PROXY name it): a host is a name or an
	// address, either may be "*" ("*" alone: any public host and port);
	// no private, loopback or link-local address is reached unless a rule
	// names that address. "all" alone is the gateway's own network,
	// everything it reaches, the sandbox's loopback included (logged as a
	// warning at start).
	Network []string
	// MemoryBytes bounds each process's data (RLIMIT_DATA);
	// 1 GiB when 0, unbounded when negative.
	MemoryBytes int64
	// Processes bounds the upstream process's processes and threads
	// together (RLIMIT_NPROC in its own user namespace);
	// 256 when 0, unbounded when negative.
	Processes int
	// OpenFiles bounds each process's open files (RLIMIT_NOFILE);
	// 1024 when 0, the gateway's own when negative.
	OpenFiles int
}

// SandboxMain runs a sandbox's launcher when this process is one, and
// then never returns: the gateway starts a sandboxed upstream by running
// its own program again as the launcher, which confines itself and
// executes the upstream's command in its place. Elsewhere it returns at
// once. A program that mounts sandboxed stdio upstreams calls it first in
// its main (and a test binary whose tests do, first in TestMain);
// without it, each start fails saying so.
func SandboxMain() { sandbox.Main() }

// allNetwork is the one Sandbox.Network rule that gives the upstream the
// gateway's own network.
const allNetwork = "all"

// profile names the sandbox as the live page and /readyz detail show it:
// "off", or the network allowed ("none", "all" or the rules) and the
// paths granted.
func (s Sandbox) profile() string {
	if s.Off {
		return "off"
	}
	var parts []string
	switch {
	case len(s.Network) == 0:
		parts = append(parts, "network none")
	default:
		parts = append(parts, "network "+strings.Join(s.Network, " "))
	}
	if len(s.Read) > 0 {
		parts = append(parts, "read "+strings.Join(s.Read, " "))
	}
	if len(s.Write) > 0 {
		parts = append(parts, "write "+strings.Join(s.Write, " "))
	}
	return strings.Join(parts, ", ")
}

// sandboxClass is the class of a profile (the sandbox's profile): off, or the
// network it has (none, all, or proxy), with no path or host.
func sandboxClass(profile string) string {
	switch {
	case profile == "off":
		return "off"
	case strings.HasPrefix(profile, "network none"):
		return "none"
	case strings.HasPrefix(profile, "network all"):
		return "all"
	default:
		return "proxy"
	}
}

// check returns what is wrong with s.
func (s Sandbox) check() error {
	if s.Off {
		if len(s.Read)+len(s.Write)+len(s.Network) > 0 {
			return errors.New("sandbox off grants nothing: drop its read, write and network")
		}
		return nil
	}
	for _, p := range append(append([]string(nil), s.Read...), s.Write...) {
		if !filepath.IsAbs(p) {
			return fmt.Errorf("sandbox path %q: give an absolute path", p)
		}
	}
	if slices.Contains(s.Network, allNetwork) {
		if len(s.Network) > 1 {
			return errors.New("sandbox network all is every host: it takes no other rule")
		}
		return nil
	}
	for _, r := range s.Network {
		if _, err := egress.ParseRule(r); err != nil {
			return fmt.Errorf("sandbox %w", err)
		}
	}
	return nil
}

// applySandbox gives up the sandbox the catalog names for it, if any:
// one profile per upstream, the catalog's or Upstream.Sandbox, not both.
func (c *Catalog) applySandbox(up *Upstream) error {
	u := c.curationOf(up.Name)
	if u == nil || u.sandbox == nil {
		return nil
	}
	switch {
	case len(up.Command) == 0:
		return fmt.Errorf("gateway: catalog: upstream %s: a sandbox confines a stdio upstream; an HTTP one runs elsewhere", up.Name)
	case !reflect.DeepEqual(up.Sandbox, Sandbox{}):
		return fmt.Errorf("gateway: upstream %s: its sandbox is given twice, by the catalog and by -upstream-sandbox (Upstream.Sandbox): keep one", up.Name)
	}
	up.Sandbox = *u.sandbox
	return nil
}

// curationOf returns the catalog's entry of the upstream name, or nil.
func (c *Catalog) curationOf(name string) *upstreamCuration {
	if c == nil {
		return nil
	}
	return c.upstreams[name]
}

// sandboxed is a stdio upstream's confinement, made at Mount.
type sandboxed struct {
	policy sandbox.Policy
	rules  []egress.Rule
	name   string
	log    *slog.Logger

	mu      sync.Mutex
	refused map[string]int64 // by host (at most maxRefusedHosts, then "other") and reason
}

// maxRefusedHosts bounds the hosts a sandbox's refusals are counted by:
// they are what the upstream asked for.
const maxRefusedHosts = 32

// newSandboxed makes the confinement of up, nil when its sandbox is off;
// dir is the base of the private directories (Config.SandboxDir).
func newSandboxed(up Upstream, dir string, log *slog.Logger) (*sandboxed, error) {
	sb := up.Sandbox
	if sb.Off || len(up.Command) == 0 {
		return nil, nil
	}
	p := sandbox.Policy{Read: sb.Read, Write: sb.Write}
	p.MemoryBytes = bound(sb.MemoryBytes, defaultSandboxMemory)
	p.Processes = int(bound(int64(sb.Processes), defaultSandboxProcesses))
	p.OpenFiles = int(bound(int64(sb.OpenFiles), defaultSandboxOpenFiles))
	s := &sandboxed{name: up.Name, log: log, refused: map[string]int64{}}
	switch {
	case slices.Contains(sb.Network, allNetwork):
		p.Network = sandbox.NetworkHost
	case len(sb.Network) > 0:
		p.Network = sandbox.NetworkProxy
		for _, r := range sb.Network {
			rule, _ := egress.ParseRule(r) // checked
			s.rules = append(s.rules, rule)
		}
	}
	home, err := privateDir(dir, up.Name)
	if err != nil {
		return nil, fmt.Errorf("gateway: upstream %s: %w", up.Name, err)
	}
	p.Home = home
	if err := sandbox.Check(p); err != nil {
		return nil, fmt.Errorf("gateway: upstream %s: %w (or run it unsandboxed: -upstream-sandbox %s=off)", up.Name, err, up.Name)
	}
	s.policy = p
	return s, nil
}

// bound is n, def when n is 0, and 0 (unbounded) when n is negative.
func bound(n, def int64) int64 {
	switch {
	case n == 0:
		return def
	case n < 0:
		return 0
	}
	return n
}

// proxy returns the egress proxy of one process, nil without rules.
func (s *sandboxed) proxy() *egress.Proxy {
	if s == nil || len(s.rules) == 0 {
		return nil
	}
	return &egress.Proxy{Rules: s.rules, Refused: s.refuse, Logger: s.log}
}

// refuse counts a refusal of host for reason.
func (s *sandboxed) refuse(host, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := host + " " + reason
	if _, ok := s.refused[key]; !ok && len(s.refused) >= maxRefusedHosts {
		key = "other " + reason
	}
	s.refused[key]++
}

// refusals calls add with each host and reason refused so far, and how
// many times.
func (s *sandboxed) refusals(add func(host, reason string, n int64)) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for key, n := range s.refused {
		host, reason, _ := strings.Cut(key, " ")
		add(host, reason, n)
	}
}

// privateDir makes (or finds) base/name, the upstream's private
// directory, reached by no other user; base defaults to a directory of the gateway's user under
// the system's temporary directory.
func privateDir(base, name string) (string, error) {
	if base == "" {
		base = filepath.Join(os.TempDir(), "vigil-sandbox-"+strconv.Itoa(os.Getuid()))
	}
	if err := os.MkdirAll(base, 0o711); err != nil {
		return "", fmt.Errorf("the sandboxes' directory: %w", err)
	}
	st, err := os.Lstat(base)
	if err != nil {
		return "", fmt.Errorf("the sandboxes' directory: %w", err)
	}
	if !st.IsDir() || st.Mode().Perm()&0o022 != 0 || !ownedByUs(st) {
		return "", fmt.Errorf("the sandboxes' directory %s must be a directory of the gateway's user that no other may write", base)
	}
	dir := filepath.Join(base, name)
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("the private directory: %w", err)
	}
	if st, err := os.Lstat(dir); err != nil || !st.IsDir() || !ownedByUs(st) {
		return "", fmt.Errorf("the private directory %s must be a directory of the gateway's user", dir)
	}
	return dir, nil
}

// ParseSandbox parses a profile as -upstream-sandbox and the catalog's
// sandbox key write it, PROFILE[,KEY=VALUE...]: PROFILE none (or empty),
// network or off; the keys read=PATH, write=PATH and net=HOST:PORT add to
// it (each repeatable), memory=BYTES (with a K, M or G suffix; -1
// unbounded), processes=N and files=N set its bounds. It checks the
// syntax; Mount checks the rest.
func ParseSandbox(spec string) (Sandbox, error) {
	var sb Sandbox
	for j, part := range strings.Split(spec, ",") {
		k, val, hasValue := strings.Cut(part, "=")
		if !hasValue {
			if j > 0 {
				return sb, fmt.Errorf("%q: a profile's name (none, network, off) comes first, and once", part)
			}
			switch part {
			case "none", "":
			case "network":
				sb.Network = []string{"*"}
			case "off":
				sb.Off = true
			default:
				return sb, fmt.Errorf("unknown profile %q: none, network or off", part)
			}
			continue
		}
		var err error
		switch k {
		case "read":
			sb.Read = append(sb.Read, val)
		case "write":
			sb.Write = append(sb.Write, val)
		case "net":
			sb.Network = append(sb.Network, val)
		case "memory":
			sb.MemoryBytes, err = parseBytes(val)
		case "processes":
			sb.Processes, err = strconv.Atoi(val)
		case "files":
			sb.OpenFiles, err = strconv.Atoi(val)
		default:
			return sb, fmt.Errorf("unknown key %q: read, write, net, memory, processes or files", k)
		}
		if err != nil {
			return sb, fmt.Errorf("%s=%q: %w", k, val, err)
		}
	}
	return sb, nil
}

// parseBytes parses N with an optional K, M or G suffix (binary), or -1.
func parseBytes(s string) (int64, error) {
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "G"), strings.HasSuffix(s, "GiB"):
		mult, s = 1<<30, strings.TrimSuffix(strings.TrimSuffix(s, "iB"), "G")
	case strings.HasSuffix(s, "M"), strings.HasSuffix(s, "MiB"):
		mult, s = 1<<20, strings.TrimSuffix(strings.TrimSuffix(s, "iB"), "M")
	case strings.HasSuffix(s, "K"), strings.HasSuffix(s, "KiB"):
		mult, s = 1<<10, strings.TrimSuffix(strings.TrimSuffix(s, "iB"), "K")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || (n < 1 && n != -1) || n > (1<<50)/mult {
		return 0, fmt.Errorf("want BYTES (K, M or G), or -1 for unbounded")
	}
	if n == -1 {
		return -1, nil
	}
	return n * mult, nil
}
