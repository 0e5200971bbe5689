// Package testkit holds test helpers that Vigil's own packages share and
// that are not part of its API (see server/mcptest for the public ones).
package testkit
