package upstreamspec

import (
	"fmt"
	"slices"
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
		sb, err := gateway.ParseSandbox(spec)
		if err != nil {
			return fmt.Errorf("-upstream-sandbox %s: %w", name, err)
		}
		ups[i].Sandbox = sb
	}
	return nil
}
