package upstreamspec

import (
	"log/slog"
	"slices"
	"strings"

	"github.com/vigil-mcp/vigil/gateway"
)

// KnownToolNames returns names (the tools served, sorted) and those of
// named (the tools the flags name) that an upstream not ready yet may
// serve once it is (NAME_tool with several upstreams; any with one),
// which are checked only against what is served now: those are logged,
// and no longer refused.
func KnownToolNames(named, names []string, sts []gateway.UpstreamStatus, logger *slog.Logger) []string {
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
