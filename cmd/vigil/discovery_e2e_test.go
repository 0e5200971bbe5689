package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/cmd/internal/servercard"
)

// discoverySchema compiles the published schema file of
// cmd/internal/servercard/testdata (its README says where each comes
// from) at ref.
func discoverySchema(t *testing.T, file, ref string) *jsonschema.Schema {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "internal", "servercard", "testdata", file))
	require.NoError(t, err)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	require.NoError(t, c.AddResource("mem:///"+file, doc))
	s, err := c.Compile("mem:///" + file + ref)
	require.NoError(t, err)
	return s
}

// validJSON requires raw to validate against s.
func validJSON(t *testing.T, s *jsonschema.Schema, raw []byte) {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	require.NoError(t, err)
	require.NoError(t, s.Validate(v), "%s", raw)
}

// TestServerCardAgrees: a gateway with a catalog of two named endpoints
// serves a Server Card for /mcp and for each, which validate against the
// extension's schema, and the AI Catalog listing the three; each card
// agrees field for field with what its endpoint answers: initialize's
// serverInfo (the name after the card's namespace, the version) and
// server/discover's supportedVersions; the card is CORS-open, carries an
// ETag and is 304 to If-None-Match; a name the catalog lacks is 404.
// With -discovery=false none of it is served.
func TestServerCardAgrees(t *testing.T) {
	dir := t.TempDir()
	catalog := filepath.Join(dir, "catalog.yaml")
	require.NoError(t, os.WriteFile(catalog, []byte("endpoints:\n  alpha:\n    tools: [\"e/echo\"]\n  beta:\n    tools: [\"e/sleep\"]\n"), 0o600))
	svc := startService(t, "-http", "127.0.0.1:0", "-catalog", catalog, "-upstream", "e="+vigilBin+" -stdio",
		"-upstream-sandbox", "e=none,read="+filepath.Dir(vigilBin))
	hc := &http.Client{Timeout: 10 * time.Second}
	defer hc.CloseIdleConnections()
	cardSchema := discoverySchema(t, "server-card.schema.json", "#/$defs/ServerCard")

	get := func(u string, header map[string]string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, u, nil)
		require.NoError(t, err)
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := hc.Do(req)
		require.NoError(t, err)
		t.Cleanup(func() { _ = resp.Body.Close() })
		return resp
	}
	body := func(resp *http.Response) []byte {
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return b
	}

	resp := get(svc.base+servercard.CatalogPath, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, servercard.CatalogMediaType, resp.Header.Get("Content-Type"))
	var cat servercard.Catalog
	require.NoError(t, json.Unmarshal(body(resp), &cat))
	var urls []string
	for _, e := range cat.Entries {
		assert.Equal(t, servercard.MediaType, e.Type)
		urls = append(urls, e.URL)
	}
	assert.Equal(t, []string{svc.base + "/mcp/server-card", svc.base + "/mcp/alpha/server-card", svc.base + "/mcp/beta/server-card"}, urls)

	for _, path := range []string{"/mcp", "/mcp/alpha", "/mcp/beta"} {
		resp := get(svc.base+path+servercard.CardSuffix, map[string]string{"Accept": servercard.MediaType, "Origin": "https://app.example"})
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		assert.Equal(t, servercard.MediaType, resp.Header.Get("Content-Type"))
		assert.Equal(t, "*", resp.Header.Get("Access-Control-Allow-Origin"))
		raw := body(resp)
		validJSON(t, cardSchema, raw)
		var card servercard.Card
		require.NoError(t, json.Unmarshal(raw, &card))
		require.Len(t, card.Remotes, 1)
		assert.Equal(t, svc.base+path, card.Remotes[0].URL)
		assert.Equal(t, "streamable-http", card.Remotes[0].Type)
		assert.Empty(t, card.Remotes[0].Headers, "no token asked for without -auth-issuer")

		c := &svcClient{hc: hc, url: svc.base + path}
		m, err := c.rpc("1", "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`)
		require.NoError(t, err)
		require.Nil(t, m.Error)
		var init struct {
			ProtocolVersion string `json:"protocolVersion"`
			ServerInfo      struct{ Name, Version string }
		}
		require.NoError(t, json.Unmarshal(m.Result, &init))
		assert.Equal(t, init.ServerInfo.Name, card.Name[strings.LastIndexByte(card.Name, '/')+1:], "the card's name is serverInfo.name under its namespace")
		assert.Equal(t, init.ServerInfo.Version, card.Version)
		assert.Contains(t, card.Remotes[0].SupportedProtocolVersions, init.ProtocolVersion)

		modern := &svcClient{hc: hc, url: svc.base + path, modern: true}
		m, err = modern.rpc("2", "server/discover", `{}`)
		require.NoError(t, err)
		require.Nil(t, m.Error)
		var disc struct {
			SupportedVersions []string `json:"supportedVersions"`
		}
		require.NoError(t, json.Unmarshal(m.Result, &disc))
		assert.Equal(t, disc.SupportedVersions, card.Remotes[0].SupportedProtocolVersions, "server/discover's versions")

		etag := resp.Header.Get("ETag")
		require.NotEmpty(t, etag)
		again := get(svc.base+path+servercard.CardSuffix, map[string]string{"If-None-Match": etag})
		assert.Equal(t, http.StatusNotModified, again.StatusCode)
		assert.Empty(t, body(again))
	}
	assert.Equal(t, http.StatusNotFound, get(svc.base+"/mcp/gamma/server-card", nil).StatusCode, "a name the catalog lacks")

	off := startService(t, "-http", "127.0.0.1:0", "-discovery=false")
	for _, path := range []string{"/mcp/server-card", servercard.CatalogPath} {
		assert.Equal(t, http.StatusNotFound, get(off.base+path, nil).StatusCode, path)
	}
}

// TestServerJSON: vigil -server-json prints a server.json that validates
// against the MCP Registry's published schema, naming the deployment's
// remote, the image and vigil's version; a name outside the registry's
// pattern is refused.
func TestServerJSON(t *testing.T) {
	schema := discoverySchema(t, "server.schema.json", "")
	out, err := exec.Command(vigilBin, "-server-json", "-public-url", "https://mcp.example.com/mcp", "-registry-name", "io.github.acme/weather-gateway").Output()
	require.NoError(t, err)
	validJSON(t, schema, out)
	var doc servercard.ServerJSON
	require.NoError(t, json.Unmarshal(out, &doc))
	assert.Equal(t, "io.github.acme/weather-gateway", doc.Name)
	assert.Equal(t, "dev", doc.Version)
	require.Len(t, doc.Remotes, 1)
	assert.Equal(t, "https://mcp.example.com/mcp", doc.Remotes[0].URL)
	require.Len(t, doc.Packages, 1)
	assert.Equal(t, "oci", doc.Packages[0].RegistryType)
	assert.Equal(t, "ghcr.io/vigil-mcp/vigil:dev", doc.Packages[0].Identifier)

	bare, err := exec.Command(vigilBin, "-server-json").Output()
	require.NoError(t, err)
	validJSON(t, schema, bare)
	bad := map[string]any{"name": "no-slash", "description": "x", "version": "1"}
	require.Error(t, schema.Validate(bad), "the schema refuses what the registry does")

	msg, err := exec.Command(vigilBin, "-server-json", "-registry-name", "no-slash").CombinedOutput()
	require.Error(t, err)
	assert.Contains(t, string(msg), "-registry-name must be")
}
