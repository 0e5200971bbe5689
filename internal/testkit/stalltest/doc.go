// Package stalltest is the stdio upstream of issue 67's stall repro, run
// by a test binary that re-executes itself: at its first tool call it
// stops reading its input, and it ignores SIGTERM and end of input, so
// that a test can check that every call through a gateway answers by its
// deadline and that shutdown kills what does not leave.
package stalltest
