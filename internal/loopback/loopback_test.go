package loopback

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestListenAddr(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]bool{
		"127.0.0.1:8080": true, "127.1.2.3:0": true, "[::1]:8080": true, "localhost:8080": true,
		"LOCALHOST:1": true, "localhost": true, "0.0.0.0:8080": false, ":8080": false, "[::]:8080": false,
		"192.168.1.10:8080": false, "mcp.internal:8080": false, "localhost.evil.example:1": false,
	} {
		if got := ListenAddr(addr); got != want {
			t.Errorf("ListenAddr(%q) = %v, want %v", addr, got, want)
		}
	}
}
