// Package egress is the HTTP proxy through which a sandboxed upstream
// reaches the network ([Proxy]): HTTP requests in absolute form and
// CONNECT tunnels, to the hosts and ports its profile allows and nothing
// else, never to a private, loopback or link-local address that the
// profile does not name itself; every refusal is reported.
package egress
