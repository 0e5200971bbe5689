package gateway_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/gateway"
	"github.com/vigil-mcp/vigil/server"
)

// TestParseSandbox: the profiles -upstream-sandbox and the catalog's
// sandbox key write, and the mistakes refused.
func TestParseSandbox(t *testing.T) {
	for spec, want := range map[string]gateway.Sandbox{
		"":                      {},
		"none":                  {},
		"network":               {Network: []string{"*"}},
		"off":                   {Off: true},
		"none,read=/a,write=/b": {Read: []string{"/a"}, Write: []string{"/b"}},
		"net=api.github.com:443,net=registry.npmjs.org:443,memory=512M,processes=64,files=256": {
			Network: []string{"api.github.com:443", "registry.npmjs.org:443"}, MemoryBytes: 512 << 20, Processes: 64, OpenFiles: 256,
		},
		"memory=-1,processes=-1": {MemoryBytes: -1, Processes: -1},
		"memory=2GiB":            {MemoryBytes: 2 << 30},
	} {
		got, err := gateway.ParseSandbox(spec)
		require.NoError(t, err, spec)
		assert.Equal(t, want, got, spec)
	}
	for _, spec := range []string{"strict", "none,off", "read", "memory=0", "memory=lots", "processes=x", "cpu=2", "none,none"} {
		_, err := gateway.ParseSandbox(spec)
		assert.Error(t, err, spec)
	}
}

// TestSandboxFromCatalog: an upstream's sandbox in the catalog file is
// its profile, shown by Upstreams; a profile given both ways, one for an
// HTTP upstream, and a bad one are refused, naming the upstream.
func TestSandboxFromCatalog(t *testing.T) {
	dir := t.TempDir()
	cat, err := gateway.ParseCatalog([]byte("default: all\nupstreams:\n  e:\n    sandbox: \"none,write=" + dir + ",memory=256M\"\n"))
	require.NoError(t, err)
	srv := server.New()
	g, err := gateway.Mount(t.Context(), srv, gateway.Config{Upstreams: []gateway.Upstream{testUpstream()}, Catalog: cat})
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = g.Close(), srv.Close() })
	sts := g.Upstreams()
	require.Len(t, sts, 1)
	assert.Equal(t, "network none, write "+dir, sts[0].Sandbox)
	assert.Contains(t, sts[0].String(), "(sandbox none)")

	twice := testUpstream()
	twice.Sandbox = gateway.Sandbox{Read: []string{"/srv"}}
	_, err = gateway.Mount(t.Context(), server.New(), gateway.Config{Upstreams: []gateway.Upstream{twice}, Catalog: cat})
	require.ErrorContains(t, err, "upstream e: its sandbox is given twice")

	_, err = gateway.ParseCatalog([]byte("upstreams:\n  e:\n    sandbox: \"none,read=relative\"\n"))
	require.ErrorContains(t, err, "give an absolute path")
	_, err = gateway.ParseCatalog([]byte("upstreams:\n  e:\n    sandbox: \"off,read=/a\"\n"))
	require.ErrorContains(t, err, "sandbox off grants nothing")

	_, err = gateway.Mount(t.Context(), server.New(), gateway.Config{Upstreams: []gateway.Upstream{{Name: "h", URL: "http://127.0.0.1:1/mcp", Sandbox: gateway.Sandbox{Off: true}}}})
	require.ErrorContains(t, err, "an HTTP upstream runs elsewhere")
}
