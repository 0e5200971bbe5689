// Package loopback tells whether a listen address is on loopback, for the
// commands' exposure checks (a public listener needs more than a loopback
// one), and guards what a loopback listener serves against DNS rebinding
// ([HostGuard]).
package loopback
