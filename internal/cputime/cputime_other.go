//go:build !unix

package cputime

import "time"

// Process cannot read the process's CPU time outside unix: it returns -1.
func Process() time.Duration { return -1 }
