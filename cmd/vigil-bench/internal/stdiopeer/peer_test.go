package stdiopeer_test

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/vigil-mcp/vigil/cmd/vigil-bench/internal/stdiopeer"
)

// fakeEnv makes the test binary stdiopeer.ServeFake (TestMain).
const fakeEnv = "VIGIL_STDIOPEER_FAKE"

func TestMain(m *testing.M) {
	if os.Getenv(fakeEnv) != "" {
		stdiopeer.ServeFake(os.Stdin, os.Stdout)
		return
	}
	goleak.VerifyTestMain(m)
}

// TestRound: a peer initializes, gets the answer to each request by its
// id (a number or a string), passing over the notifications and requests
// between, and fails once the server is gone.
func TestRound(t *testing.T) {
	t.Setenv(fakeEnv, "1")
	self, err := os.Executable()
	require.NoError(t, err)
	p, err := stdiopeer.Start(t.Context(), self, "test", "2025-06-18")
	require.NoError(t, err)
	for _, id := range []string{"1", `"two"`} {
		line, err := p.Round([]byte(`{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{}}`), []byte(id))
		require.NoError(t, err)
		assert.JSONEq(t, `{"jsonrpc":"2.0","id":`+id+`,"result":{"serverInfo":{},"content":[{"type":"text","text":`+quote(t, "tools/call "+id)+`}]}}`, string(line))
	}
	p.Close()
	_, err = p.Round([]byte(`{"jsonrpc":"2.0","id":3,"method":"ping"}`), []byte("3"))
	require.Error(t, err)
}

// TestStartRefusesNoCommand: an empty command line is an error, not a
// panic.
func TestStartRefusesNoCommand(t *testing.T) {
	_, err := stdiopeer.Start(t.Context(), " ", "test", "2025-06-18")
	require.Error(t, err)
}

func quote(t *testing.T, s string) string {
	t.Helper()
	b, err := json.Marshal(s)
	require.NoError(t, err)
	return string(b)
}
