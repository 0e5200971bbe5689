package transport

import (
	"context"
)

// Multicast delivers one notification to many sessions of a transport at
// once: it is queued once, not once per session, and each session's stream
// writes it when it next runs (Streamable HTTP: every standalone GET stream
// of an Endpoint). A server sends a notification meant for every session
// through the Multicast of each group its sessions joined (see
// [MulticastMember]), and through Conn.Write to the others.
type Multicast interface {
	// Send delivers n to every session that joined the group and is still
	// open, and returns how many those are. n is frozen (Request.Freeze)
	// and must not change afterwards. Send never blocks on a session.
	Send(ctx context.Context, n *Request) int
}

// MulticastMember is implemented by a Conn whose transport can reach it
// through a [Multicast]. A Conn that wraps another passes both methods on.
type MulticastMember interface {
	// Multicast returns the group the Conn can join, the same for every
	// Conn of the group, and comparable; nil when it can join none (a
	// resumable or shared session).
	Multicast() Multicast
	// JoinMulticast has the Conn receive its group's notifications from
	// now on, for as long as it lasts: the server calls it once the
	// session is initialized.
	JoinMulticast()
}
