package cputime_test

import (
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/vigil-mcp/vigil/internal/cputime"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Work on the CPU shows in the process's CPU time, which never goes back.
func TestProcessCountsWork(t *testing.T) {
	before := cputime.Process()
	require.GreaterOrEqual(t, before, time.Duration(0), "getrusage answers")
	sum := sha256.Sum256(nil)
	for now := before; now <= before; now = cputime.Process() { // hashing until the clock ticks
		for range 1000 {
			sum = sha256.Sum256(sum[:])
		}
	}
	assert.Greater(t, cputime.Process(), before)
}

// Process is read twice around the work to measure; the difference is
// the CPU the work took, on every thread of the process.
func ExampleProcess() {
	start := cputime.Process()
	sum := sha256.Sum256(nil)
	for range 1000 {
		sum = sha256.Sum256(sum[:])
	}
	used := cputime.Process() - start
	fmt.Println("counted:", used >= 0, len(sum))
	// Output: counted: true 32
}
