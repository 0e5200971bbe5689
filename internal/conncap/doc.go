// Package conncap holds the capabilities a [transport.Conn] may have
// beyond the Conn contract, which Vigil's transports implement and its
// server looks for: messages dispatched on their own goroutines ([Inline],
// [Driven]), a session id of the transport's ([SessionIDer]), notifications
// sent once to many sessions ([Multicast]), a client's standalone stream
// ([ClientPresence]), a session served by several replicas ([Shared]), a
// Conn that carries one request ([Single]), and the context marks that
// route a message ([ContextWithRelatedRequest], [ContextWithBroadcast]).
// A Conn that wraps another ([Wrapper]) passes them on. [Attacher] is a
// server that runs a [Driven] Conn's session without a goroutine of its
// own. [WrapIOError] classes a transport's I/O errors.
//
// A user writing a transport implements transport.Conn alone; these are
// the contract between Vigil's own packages.
package conncap
