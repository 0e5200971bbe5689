// Package streamabletest helps test servers built on Vigil's Streamable
// HTTP transport in its shared mode without Redis: [Cluster] is an
// in-memory [replication.Cluster] that several Endpoints of one process
// share, each as one replica, with the failures of a real one on demand (a
// store that goes down, relays held back as a slow network would hold
// them). Drive the Endpoints with streamable.Dial and server/mcptest.
package streamabletest
