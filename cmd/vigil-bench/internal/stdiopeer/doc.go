// Package stdiopeer is the benchmarks' client of an MCP server over stdio:
// its child process, one request at a time, with the session initialized.
// vigil-bench's direct client times calls through it (the stdio hop
// against direct), and the floor's -relay writes each call on through it
// (the floor of a gateway).
//
// [ServeFake] is a server over stdio for the tests of those that use it:
// a test binary runs it from TestMain when an environment variable says
// so, and starts itself as the peer.
package stdiopeer
