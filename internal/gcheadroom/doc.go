// Package gcheadroom keeps the garbage collector from running often while
// the live heap is small: it raises GOGC after each collection so that the
// heap goal stays at least a fixed headroom above the live heap, and lets
// GOGC's own proportion rule once the live heap is large.
//
// A service whose live heap is a few MiB but that allocates per request
// collects many times a second under GOGC=100 (a 4 MiB live heap has an
// 8 MiB goal), and spends a large share of its CPU marking and sweeping.
// With a headroom of H the goal is max(live×(1+GOGC/100), live+H): RSS
// grows by up to H under load, and nothing changes once the live heap
// exceeds H×100/GOGC. It is the heap ballast of old, without the ballast.
//
// The package changes process-wide runtime settings, so only a main
// package should use it, once.
package gcheadroom
