package gateway

import (
	"strings"
	"unicode/utf8"
)

// The bounds on the instructions the gateway gives its clients, in bytes
// (docs/limits.md): every initialize answer and server/discover result
// carries them, so an upstream's instructions cost each client that
// connects, read or not.
const (
	// maxUpstreamInstructions bounds the instructions kept of one
	// upstream. They count in its catalog's bound (maxCatalog), of which
	// they may take instructionsShare at most (64 KiB of the default 16
	// MiB), the rest left to its listing.
	maxUpstreamInstructions = 64 << 10
	instructionsShare       = 256 // the instructions may take 1/256 of the catalog's bound
	// maxInstructions bounds the server's instructions the gateway sets:
	// its own and every upstream's, headings included.
	maxInstructions = 256 << 10
)

// keptInstructions returns what the gateway keeps of text, the
// instructions an upstream's initialize answered with: at most
// maxUpstreamInstructions bytes, and no more than instructionsShare of
// its catalog's bound, cut at the start of a character.
func (m *mount) keptInstructions(text string) string {
	return cutUTF8(text, int(min(maxUpstreamInstructions, m.maxCatalog()/instructionsShare)))
}

// cutUTF8 returns s cut to at most n bytes, at the start of a character.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// instructed records the instructions the upstream of m answered its
// listing session's initialize with (text, kept as keptInstructions has
// it, logged when cut), and sets the server's: its own (as they were at
// Mount) and each upstream's, in the order of the upstreams; with one
// upstream, its own as it sent them, and with several, each under a
// heading that names it ("## NAME"), its tools and prompts being named
// NAME_*; all of it cut to maxInstructions, logged. g.mu is held.
func (g *Gateway) instructed(m *mount, text string) {
	kept := m.keptInstructions(text)
	if m.instructions == kept {
		return
	}
	if len(kept) < len(text) {
		m.log.Warn("gateway: the upstream's instructions cut to the gateway's bound", "upstream", m.up.Name, "bytes", len(text), "kept", len(kept))
	}
	m.instructions = kept
	var parts []string
	if g.ownInstructions != "" {
		parts = append(parts, g.ownInstructions)
	}
	for _, m := range g.mounts {
		switch {
		case m.instructions == "":
		case len(g.mounts) == 1:
			parts = append(parts, m.instructions)
		default:
			parts = append(parts, "## "+m.up.Name+"\n\n"+m.instructions)
		}
	}
	all := strings.Join(parts, "\n\n")
	if len(all) > maxInstructions {
		m.log.Warn("gateway: the instructions of the server and its upstreams cut to the gateway's bound", "bytes", len(all), "kept", maxInstructions)
		all = cutUTF8(all, maxInstructions)
	}
	g.srv.SetInstructions(all)
}
