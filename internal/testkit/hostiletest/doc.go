// Package hostiletest is a hostile stdio upstream, run by a test binary
// that re-executes itself: huge results, floods of progress and of large
// log messages, calls that never end and a catalog of any size, so that a
// test can check what a gateway in front of it holds and answers.
package hostiletest
