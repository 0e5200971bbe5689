// Package redistest starts a real redis-server (Debian's package) for the
// tests of Vigil's shared mode: on a free loopback port, with its own data
// directory, stopped when the test ends. Without a redis-server binary the
// test is skipped on a developer's machine and fails under CI=true, where
// a missing component is a failure.
package redistest
