// Package cputime reads the CPU time the calling process has used, for
// the overload shedder's busy guard and the handler benchmarks' CPU per
// request.
package cputime
