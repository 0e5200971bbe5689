// Package vocab is the part of the protocol vocabulary that only Vigil's
// own packages use: the _meta keys the server and the HTTP transport read
// and write, which versions have sessions and batches, and every value of
// each of package protocol's enumerations, in a stable order, for
// pre-creating telemetry series (Metrics: the collector's vocabulary). It
// is the one internal package that imports a public one, the leaf
// vocabulary transport/protocol whose values it lists.
package vocab
