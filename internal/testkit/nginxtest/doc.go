// Package nginxtest starts a real nginx (Debian's package) as the load
// balancer of Vigil's shared-mode tests: round robin over the upstreams,
// no session affinity, no buffering (SSE streams pass as they are
// written), on a free loopback port, with its configuration, logs and
// temporary files in the test's own directory. Without an nginx binary the
// test is skipped on a developer's machine and fails under CI=true, where
// a missing component is a failure.
package nginxtest
