// Package demotools holds the tools vigil serves when it fronts no
// upstream: echo, sleep, countdown (progress), convert_temperature (typed
// input and output) and confirm_action (elicitation), which [Register]
// adds; and downstream_whoami, which [AddWhoami] adds with token exchange
// (RFC 8693). Only cmd/vigil imports it.
package demotools
