package streamable_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/transport/streamable"
)

// htDiscover is the 2026-07-28 DNS-rebinding probe of C12.
const htDiscover = `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"conformance-dns-rebinding-test","version":"1.0.0"}}}}`

// On a loopback listener only loopback names (and the configured hosts) are
// accepted as Host and as Origin, against DNS rebinding: anything else is
// 403 with a JSON-RPC error, for every method and era.
func TestHTTPDNSRebinding(t *testing.T) {
	plain := newHTEnv(t, nil)
	allowed := newHTEnv(t, nil, streamable.WithAllowedHosts("mcp.example.com", "api.example.com:8443"))
	originCheck := newHTEnv(t, nil, streamable.WithOriginCheck(func(origin string, _ *http.Request) bool {
		return origin == "https://app.example"
	}))
	port := func(e *htEnv) string {
		u, err := url.Parse(e.ts.URL)
		require.NoError(t, err)
		return u.Port()
	}
	init25 := htInitBody(`{}`)
	v25 := htH{"MCP-Protocol-Version": htVersion, "Mcp-Method": "initialize"}
	v26 := htSLHeaders("server/discover", "")
	with := func(h htH, kv ...string) htH {
		out := htH{}
		for k, v := range h {
			out[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}

	tests := []struct {
		name   string
		env    *htEnv
		method string
		body   string
		hdr    func(port string) htH
		status int
	}{
		{"evil Host, 2025", plain, http.MethodPost, init25, func(string) htH { return with(v25, "Host", "evil.example.com") }, 403},
		{"evil Host and Origin, 2025", plain, http.MethodPost, init25, func(string) htH {
			return with(v25, "Host", "evil.example.com", "Origin", "http://evil.example.com")
		}, 403},
		{"evil Host with port", plain, http.MethodPost, init25, func(p string) htH { return with(v25, "Host", "evil.example.com:"+p) }, 403},
		{"evil Origin, 2025", plain, http.MethodPost, init25, func(string) htH { return with(v25, "Origin", "http://evil.example.com") }, 403},
		{"null Origin", plain, http.MethodPost, init25, func(string) htH { return with(v25, "Origin", "null") }, 403},
		{"evil Host and Origin, 2026", plain, http.MethodPost, htDiscover, func(string) htH {
			return with(v26, "Host", "evil.example.com", "Origin", "http://evil.example.com")
		}, 403},
		{"evil Host, GET", plain, http.MethodGet, "", func(string) htH { return htH{"Host": "evil.example.com", "Mcp-Session-Id": "x"} }, 403},
		{"evil Host, DELETE", plain, http.MethodDelete, "", func(string) htH { return htH{"Host": "evil.example.com", "Mcp-Session-Id": "x"} }, 403},
		{"evil Host, PUT", plain, http.MethodPut, "", func(string) htH { return htH{"Host": "evil.example.com"} }, 403},
		{"localhost:port", plain, http.MethodPost, init25, func(p string) htH {
			return with(v25, "Host", "localhost:"+p, "Origin", "http://localhost:"+p)
		}, 200},
		{"127.0.0.1:port", plain, http.MethodPost, init25, func(p string) htH {
			return with(v25, "Host", "127.0.0.1:"+p, "Origin", "http://127.0.0.1:"+p)
		}, 200},
		{"[::1]:port", plain, http.MethodPost, init25, func(p string) htH { return with(v25, "Host", "[::1]:"+p) }, 200},
		{"LOCALHOST", plain, http.MethodPost, init25, func(string) htH { return with(v25, "Host", "LOCALHOST") }, 200},
		{"loopback Host and Origin, 2026", plain, http.MethodPost, htDiscover, func(p string) htH {
			return with(v26, "Host", "localhost:"+p, "Origin", "http://localhost:"+p)
		}, 200},
		{"allowed host", allowed, http.MethodPost, init25, func(string) htH { return with(v25, "Host", "mcp.example.com") }, 200},
		{"allowed host, any port", allowed, http.MethodPost, init25, func(string) htH { return with(v25, "Host", "mcp.example.com:9999") }, 200},
		{"allowed host:port", allowed, http.MethodPost, init25, func(string) htH { return with(v25, "Host", "api.example.com:8443") }, 200},
		{"allowed host, other port", allowed, http.MethodPost, init25, func(string) htH { return with(v25, "Host", "api.example.com:9999") }, 403},
		{"allowed origin", allowed, http.MethodPost, init25, func(string) htH {
			return with(v25, "Host", "mcp.example.com", "Origin", "https://mcp.example.com")
		}, 200},
		{"allowed hosts keep loopback", allowed, http.MethodPost, init25, func(p string) htH { return with(v25, "Host", "127.0.0.1:"+p) }, 200},
		{"allowed hosts refuse others", allowed, http.MethodPost, init25, func(string) htH { return with(v25, "Host", "evil.example.com") }, 403},
		{"custom origin check accepts", originCheck, http.MethodPost, init25, func(string) htH { return with(v25, "Origin", "https://app.example") }, 200},
		{"custom origin check refuses", originCheck, http.MethodPost, init25, func(p string) htH { return with(v25, "Origin", "http://localhost:"+p) }, 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.env.do(tt.method, tt.body, tt.hdr(port(tt.env)))
			if tt.status == http.StatusForbidden {
				m := htRPCError(t, r, http.StatusForbidden, -32600)
				assert.JSONEq(t, `null`, string(m.ID))
				assert.Empty(t, r.header.Get("Mcp-Session-Id"), "no session for a refused request")
				return
			}
			require.Equal(t, tt.status, r.status, "%s", r.body)
			m := htDecode(t, r.body)
			assert.Nil(t, m.Error, "%s", r.body)
			assert.NotEmpty(t, m.Result)
		})
	}
}
