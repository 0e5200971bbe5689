package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestUserAccountMetadataOfAnotherResource (issue 88, D1): an upstream
// whose RFC 9728 metadata names another resource than its URL fails
// vigil's start, the error naming the metadata's URL, the resource it
// names and the upstream's URL; its authorization server is never asked
// anything (nor sent the gateway's client secret).
func TestUserAccountMetadataOfAnotherResource(t *testing.T) {
	asked := make(chan string, 16)
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked <- r.URL.Path
		http.NotFound(w, r)
	}))
	defer as.Close()
	var up *httptest.Server
	up = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/.well-known/oauth-protected-resource/mcp" {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"resource": "https://other.example/mcp", "authorization_servers": []string{as.URL}})
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+up.URL+`/.well-known/oauth-protected-resource/mcp"`)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer up.Close()
	secret := filepath.Join(t.TempDir(), "up-secret")
	require.NoError(t, os.WriteFile(secret, []byte(userUpSecret+"\n"), 0o600))

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, vigilBin, "-http", "127.0.0.1:0", "-auth-issuer", "http://127.0.0.1:9", "-auth-resource", "http://127.0.0.1:8080/mcp",
		"-upstream", "u="+up.URL+"/mcp", "-upstream-auth", "u=user,client_id="+userGatewayClient+",client_secret=@"+secret,
		"-connect-client-id", userSignInClient, "-connect-client-secret", "env:CONNECT_SECRET")
	cmd.Env = append(os.Environ(), "CONNECT_SECRET="+userSignInSecret)
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "vigil must not start:\n%s", out)
	assert.Contains(t, string(out), `the protected resource metadata at `+up.URL+`/.well-known/oauth-protected-resource/mcp names the resource "https://other.example/mcp", not `+up.URL+`/mcp`)
	assert.Contains(t, string(out), "RFC 9728")
	assert.NotContains(t, string(out), userUpSecret)
	select {
	case path := <-asked:
		t.Errorf("the authorization server was asked %s", path)
	default:
	}
}
