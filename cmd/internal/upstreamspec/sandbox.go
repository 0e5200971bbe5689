package upstreamspec

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/vigil-mcp/vigil/gateway"
)

// ApplySandbox applies the values of -upstream-sandbox,
// NAME=[PROFILE][,KEY=VALUE...], to the stdio upstreams: PROFILE is none
// (the default), network (any public host through the egress proxy) or
// off; the keys read=PATH, write=PATH and net=HOST:PORT add to it (each
// repeatable), memory=BYTES (with a K, M or G suffix; -1 unbounded),
// processes=N and files=N set its bounds. One value per upstream.
func ApplySandbox(ups []gateway.Upstream, values []string) error {
	seen := map[string]bool{}
	for _, v := range values {
		name, spec, _ := strings.Cut(v, "=")
		i := slices.IndexFunc(ups, func(up gateway.Upstream) bool { return up.Name == name })
		switch {
		case i < 0:
			return fmt.Errorf("-upstream-sandbox %q: want NAME=PROFILE[,KEY=VALUE...] for an -upstream NAME", v)
		case len(ups[i].Command) == 0:
			return fmt.Errorf("-upstream-sandbox %s: a sandbox confines a stdio upstream; %s is an HTTP one, which runs elsewhere", name, name)
		case seen[name]:
			return fmt.Errorf("-upstream-sandbox %s: given twice; put the whole profile in one value", name)
		}
		seen[name] = true
		sb, err := ParseSandbox(spec)
		if err != nil {
			return fmt.Errorf("-upstream-sandbox %s: %w", name, err)
		}
		ups[i].Sandbox = sb
	}
	return nil
}

// ParseSandbox parses a profile: [PROFILE][,KEY=VALUE...] (see
// ApplySandbox).
func ParseSandbox(spec string) (gateway.Sandbox, error) {
	var sb gateway.Sandbox
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
