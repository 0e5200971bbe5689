package exepages_test

import (
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/vigil-mcp/vigil/internal/exepages"
	"github.com/vigil-mcp/vigil/internal/testkit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestReleaseUnmapsTheExecutable: the test binary, started, holds much of
// itself resident; after Release it holds a fraction.
func TestReleaseUnmapsTheExecutable(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	smaps := make([]byte, 4<<20)
	before := testkit.ExeResident(t, readSmaps(t, smaps), exe)
	require.Greater(t, before, uint64(2<<20), "the test binary holds little of itself to begin with")
	advised, err := exepages.Release()
	// Read at once, with as little code as can be: what the test runs
	// after Release is resident again.
	n := readSmaps(t, smaps)
	require.NoError(t, err)
	after := testkit.ExeResident(t, n, exe)
	t.Logf("resident %d KiB before, %d KiB after", before>>10, after>>10)
	assert.Greater(t, advised, before/2, "advised less than half of what was resident")
	assert.Less(t, after, before/2, "the executable's pages stayed resident: %d KiB before, %d KiB after", before>>10, after>>10)
}

// readSmaps reads /proc/self/smaps into buf and returns it, with the
// system calls alone.
func readSmaps(t *testing.T, buf []byte) []byte {
	fd, err := syscall.Open("/proc/self/smaps", syscall.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for n < len(buf) {
		r, err := syscall.Read(fd, buf[n:])
		if err != nil || r == 0 {
			break
		}
		n += r
	}
	require.NoError(t, syscall.Close(fd))
	if n == len(buf) {
		t.Fatal("/proc/self/smaps is larger than the buffer")
	}
	return buf[:n]
}
