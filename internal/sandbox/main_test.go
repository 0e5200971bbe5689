package sandbox_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/vigil-mcp/vigil/internal/sandbox"
)

// TestMain runs the sandbox's launcher when the test binary is started
// as one (sandbox.Main), else the tests.
func TestMain(m *testing.M) {
	sandbox.Main()
	goleak.VerifyTestMain(m)
	os.Exit(0)
}
