// Package maxprocs lets the runtime's parallelism follow the load: a
// process that uses less than a core runs its goroutines on one P
// (GOMAXPROCS 1), and gets the runtime's default back as soon as it uses
// more.
//
// A service at a moderate rate, its calls apart, spends more CPU per call
// than the same service at full load: each call wakes goroutines that
// were parked, and with several Ps idle the runtime wakes an idle thread
// for each of them, which spins looking for work and parks again
// (futex calls and context switches, the kernel's half of the CPU). On one
// P a goroutine made runnable runs next on the same thread. Measured on
// the shipped vigil at 200 requests a second on two cores: CPU per request
// 1.51 times a plain net/http server's with two Ps, 1.14 times with one;
// context switches per request 9.5 against 5.6 (docs/perf/ROUNDS.md).
//
// The follower reads the process's CPU time every Interval. On one P,
// using more than Up of a core in an interval restores the default (the
// runtime's, which follows the CPU quota of its cgroup); with the default,
// using less than Down of a core for Quiet intervals in a row drops to one
// P again. The gap between the two keeps it from flapping (the same load
// costs more CPU on several Ps), and Quiet keeps the Ps of a load that
// pauses for a second or two. A burst after rest runs on one P for at
// most an interval, or until the overload shedder's first busy interval.
//
// The overload shedder (internal/overload) sheds nothing while the
// process runs on fewer Ps than it was given: the remedy for a burst that
// finds it on one is its Ps, and the shedder gives them back itself at
// its first busy interval (a tenth of a second), without waiting for the
// follower's. The follower reads the Ps the process runs on at each
// interval, so either may change them. At 2,048 clients after a pause, a
// burst that waited the follower's interval on one P reached its
// shedding's steady state that much later: its admitted requests' p99
// read 94–117 ms against 74–79 ms with the Ps fixed (docs/perf/ROUNDS.md).
//
// A GOMAXPROCS set by the operator (the environment variable) is theirs:
// the follower is then not started. Only a main package should use it,
// once: it changes a process-wide runtime setting.
package maxprocs
