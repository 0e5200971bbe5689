package gateway

import "strings"

// instructed records the instructions the upstream of m answered its
// listing session's initialize with, and sets the server's: its own (as
// they were at Mount) and each upstream's, in the order of the
// upstreams; with one upstream, its own as it sent them, and with
// several, each under a heading that names it ("## NAME"), its tools and
// prompts being named NAME_*. g.mu is held.
func (g *Gateway) instructed(m *mount, text string) {
	if m.instructions == text {
		return
	}
	m.instructions = text
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
	g.srv.SetInstructions(strings.Join(parts, "\n\n"))
}
