//go:build !unix

package overload

import "time"

// processCPU cannot read the process's CPU time here: it reports none, and
// the Limiter takes every interval for a busy one (see Config.CPU).
func processCPU() time.Duration { return -1 }
