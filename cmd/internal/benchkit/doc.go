// Package benchkit holds what the benchmarks of Vigil's commands share
// across them: the in-process handler benchmarks of make bench-footprint,
// cmd/vigil's BenchmarkServiceHandler and cmd/vigil-bench/floor's
// BenchmarkFloorHandler, post the same tools/call echo the same way
// ([Poster], [Recorder], [AppendEchoCall], [SetEchoHeaders]) and report
// the process's CPU time per request ([ReportCPU]); and [SumCounter] reads
// a counter off a Prometheus exposition (vigil's /metrics), which the
// service benchmark and cmd/vigil's shared-mode tests check. Only cmd/
// imports it.
package benchkit
