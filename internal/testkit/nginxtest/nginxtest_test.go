package nginxtest_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/vigil-mcp/vigil/internal/testkit/nginxtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The proxy spreads requests over its upstreams in turn, and passes the
// Host it was asked for.
func TestRoundRobin(t *testing.T) {
	serve := func(name string) *httptest.Server {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, name+" "+r.Host)
		}))
		t.Cleanup(s.Close)
		return s
	}
	a, b := serve("a"), serve("b")
	p := nginxtest.Start(t, strings.TrimPrefix(a.URL, "http://"), strings.TrimPrefix(b.URL, "http://"))
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	seen := map[string]int{}
	for range 4 {
		resp, err := client.Get(p.URL() + "/mcp")
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		name, host, _ := strings.Cut(string(body), " ")
		assert.Equal(t, strings.TrimPrefix(p.URL(), "http://"), host)
		seen[name]++
	}
	assert.Equal(t, map[string]int{"a": 2, "b": 2}, seen, "round robin, no affinity")
}
