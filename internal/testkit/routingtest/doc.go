// Package routingtest is the stdio upstream of issue 67's routing repro,
// run by a test binary that re-executes itself: it logs about each call
// and asks its question, ignoring cancels, so that a test can check that
// nothing of one caller's call reaches another through a gateway.
package routingtest
