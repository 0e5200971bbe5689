package procself_test

import (
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/vigil-mcp/vigil/cmd/internal/procself"
)

// TestProtect: after Protect the process is not dumpable and has no
// core size, and the pagemap it returns still reads.
func TestProtect(t *testing.T) {
	if os.Getenv("PROCSELF_CHILD") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestProtect$")
		cmd.Env = append(os.Environ(), "PROCSELF_CHILD=1")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		assert.Contains(t, string(out), "PASS")
		return
	}
	pagemap := procself.Protect()
	require.NotNil(t, pagemap)
	dumpable, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	require.NoError(t, err)
	assert.Equal(t, 0, dumpable)
	var core unix.Rlimit
	require.NoError(t, unix.Getrlimit(unix.RLIMIT_CORE, &core))
	assert.Zero(t, core.Cur)
	buf := make([]byte, 8)
	_, err = pagemap.ReadAt(buf, 0)
	assert.NoError(t, err, "the pagemap opened before reads")
}
