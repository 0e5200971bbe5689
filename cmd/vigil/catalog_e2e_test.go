package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/gateway"
	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/server"
)

// catalogFile is the catalog of TestCatalogRealServers: server-everything's
// echo served as say, its message fixed; server-filesystem's
// read_text_file as read_notes, its path fixed to notes.txt; a hidden
// tool of each; an endpoint for each upstream.
const catalogFile = `upstreams:
  everything:
    tools:
      echo:
        name: say
        description: %s
        arguments:
          message: {fixed: "from the catalog"}
      get-env: {hide: true}
  fs:
    tools:
      read_text_file:
        name: read_notes
        title: Read the notes
        description: Reads the team's notes.
        arguments:
          path: {fixed: %q}
          head: {default: 1}
      write_file: {hide: true}
endpoints:
  files:
    tools: ["fs/*"]
  demo:
    tools: ["everything/get-sum", "everything/echo"]
`

// TestCatalogRealServers: through server-everything and server-filesystem
// (vigil -catalog): a renamed tool with a new description and a fixed
// argument is listed as configured and calls upstream with the fixed
// value; sending the fixed argument is refused -32602; a hidden tool is
// neither listed nor callable; the metrics and spans name the served
// tool and its upstream; each endpoint lists and calls only its own; the
// file read again on SIGHUP is served to the session open before it, and
// a bad one is refused with its line, the one in force kept.
func TestCatalogRealServers(t *testing.T) {
	everything := everythingServer(t)
	fs := referenceServer(t, "server-filesystem")
	dir := t.TempDir()
	notes := filepath.Join(dir, "notes.txt")
	require.NoError(t, os.WriteFile(notes, []byte("line one\nline two\n"), 0o600))
	file := filepath.Join(t.TempDir(), "catalog.yaml")
	write := func(text string) { require.NoError(t, os.WriteFile(file, []byte(text), 0o600)) }
	write(fmt.Sprintf(catalogFile, "Repeats the catalog's words.", notes))

	svc := startService(t, "-http", "127.0.0.1:0", "-catalog", file,
		"-upstream", "everything=node "+everything, "-upstream", "fs=node "+fs+" "+dir, "-upstream-sandbox", "fs=none,write="+dir)
	hc := &http.Client{Timeout: 30 * time.Second}
	defer hc.CloseIdleConnections()
	svcEventually(t, "vigil is ready: its upstreams serve their tools", 60*time.Second, func() (bool, error) {
		resp, err := hc.Get(svc.base + "/readyz")
		if err != nil {
			return false, err
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	session := func(path string) *svcClient {
		c := &svcClient{hc: hc, url: svc.base + path}
		m, err := c.rpc("1", "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`)
		require.NoError(t, err)
		require.Nil(t, m.Error)
		require.NoError(t, c.notify("notifications/initialized"))
		return c
	}
	listed := func(c *svcClient) map[string]json.RawMessage {
		m, err := c.rpc("2", "tools/list", `{}`)
		require.NoError(t, err)
		require.Nil(t, m.Error)
		var res struct {
			Tools []json.RawMessage `json:"tools"`
		}
		require.NoError(t, json.Unmarshal(m.Result, &res))
		out := map[string]json.RawMessage{}
		for _, raw := range res.Tools {
			var tool struct{ Name string }
			require.NoError(t, json.Unmarshal(raw, &tool))
			out[tool.Name] = raw
		}
		return out
	}
	call := func(c *svcClient, name, args string) svcMessage {
		m, err := c.rpc("3", "tools/call", `{"name":"`+name+`","arguments":`+args+`}`)
		require.NoError(t, err)
		return m
	}

	c := session("/mcp")
	tools := listed(c)
	for _, gone := range []string{"echo", "get-env", "read_text_file", "fs_read_text_file", "everything_echo", "write_file", "fs_write_file"} {
		assert.NotContains(t, tools, gone)
	}
	require.Contains(t, tools, "say")
	require.Contains(t, tools, "read_notes")
	assert.Contains(t, tools, "everything_get-sum", "an uncurated tool keeps its prefixed name")
	var say, readNotes struct {
		Title, Description string
		InputSchema        struct {
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		} `json:"inputSchema"`
	}
	require.NoError(t, json.Unmarshal(tools["say"], &say))
	require.NoError(t, json.Unmarshal(tools["read_notes"], &readNotes))
	assert.Equal(t, "Repeats the catalog's words.", say.Description)
	assert.NotContains(t, say.InputSchema.Properties, "message")
	assert.NotContains(t, say.InputSchema.Required, "message")
	assert.Equal(t, "Read the notes", readNotes.Title)
	assert.NotContains(t, readNotes.InputSchema.Properties, "path")
	var head struct {
		Default json.RawMessage `json:"default"`
	}
	require.NoError(t, json.Unmarshal(readNotes.InputSchema.Properties["head"], &head))
	assert.JSONEq(t, "1", string(head.Default), "the default is in the schema")

	m := call(c, "say", `{}`)
	require.Nil(t, m.Error)
	assert.Contains(t, string(m.Result), "from the catalog", "the upstream got the fixed message")
	m = call(c, "read_notes", `{}`)
	require.Nil(t, m.Error)
	assert.Contains(t, string(m.Result), "line one")
	assert.NotContains(t, string(m.Result), "line two", "the default head: 1 was sent")
	m = call(c, "say", `{"message":"mine"}`)
	require.NotNil(t, m.Error, "the fixed argument is refused")
	assert.Equal(t, int64(-32602), m.Error.Code)
	m = call(c, "read_notes", `{"path":"/etc/passwd"}`)
	require.NotNil(t, m.Error)
	assert.Equal(t, int64(-32602), m.Error.Code)
	for _, hidden := range []string{"get-env", "everything_get-env", "fs_write_file", "echo", "everything_echo"} {
		m = call(c, hidden, `{}`)
		require.NotNil(t, m.Error, hidden)
		assert.Contains(t, m.Error.Message, "unknown tool", hidden)
	}

	families := svcMetrics(t, hc, svc.base)
	assert.Positive(t, svcSample(t, families, mcpconv.MetricUpstreamCalls,
		map[string]string{"upstream": "everything", "mcp_method_name": "tools/call", "gen_ai_tool_name": "echo", "outcome": "ok"}).GetCounter().GetValue(), "the hop counts the upstream's tool")
	assert.Positive(t, svcSample(t, families, mcpconv.MetricUpstreamCalls,
		map[string]string{"upstream": "fs", "mcp_method_name": "tools/call", "gen_ai_tool_name": "read_text_file", "outcome": "ok"}).GetCounter().GetValue())
	var served uint64 // the requests' durations name the served tool and its upstream
	for _, m := range families["mcp_server_operation_duration_seconds"].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["gen_ai_tool_name"] == "say" && labels["upstream"] == "everything" && labels["error_type"] == "" {
			served += m.GetHistogram().GetSampleCount()
		}
	}
	assert.Positive(t, served, "the request is the served tool's, of its upstream")

	raw, err := debugGet(hc, svc.base+"/debug/vigil?format=json")
	require.NoError(t, err)
	var snap struct {
		Traces []struct {
			Spans []struct {
				Attributes map[string]string `json:"attributes"`
			} `json:"spans"`
		} `json:"traces"`
	}
	require.NoError(t, json.Unmarshal(raw, &snap))
	found := false
	for _, tr := range snap.Traces {
		for _, s := range tr.Spans {
			if s.Attributes["gen_ai.tool.name"] == "say" {
				found = true
				assert.Equal(t, "everything", s.Attributes[string(mcpconv.UpstreamKey)])
			}
		}
	}
	assert.True(t, found, "a span names the served tool")

	files, demo := session("/mcp/files"), session("/mcp/demo")
	fileTools, demoTools := listed(files), listed(demo)
	assert.Contains(t, fileTools, "read_notes")
	assert.NotContains(t, fileTools, "say")
	assert.NotContains(t, fileTools, "fs_write_file", "hidden everywhere")
	assert.ElementsMatch(t, []string{"say", "everything_get-sum"}, keysOf(demoTools))
	assert.Nil(t, call(files, "read_notes", `{}`).Error)
	assert.Contains(t, call(files, "say", `{}`).Error.Message, "unknown tool")
	assert.Contains(t, call(demo, "read_notes", `{}`).Error.Message, "unknown tool")

	write("upstreams:\n  everything:\n    tools:\n      echo: {nme: say}\n")
	require.NoError(t, syscall.Kill(svc.cmd.Process.Pid, syscall.SIGHUP))
	svcEventually(t, "the bad file is refused with its line", 30*time.Second, func() (bool, error) {
		return strings.Contains(svc.logs.String(), `catalog refused: the catalog in force stays`) && strings.Contains(svc.logs.String(), `line 4: unknown key \"nme\"`), nil
	})
	assert.Contains(t, listed(c), "say", "the catalog in force stays")

	write(fmt.Sprintf(catalogFile, "Says it again.", notes))
	require.NoError(t, syscall.Kill(svc.cmd.Process.Pid, syscall.SIGHUP))
	svcEventually(t, "the file read again is served to the session open before", 30*time.Second, func() (bool, error) {
		return strings.Contains(string(listed(c)["say"]), "Says it again."), nil
	})
	m = call(c, "say", `{}`)
	require.Nil(t, m.Error, "the session lives on")
	assert.Contains(t, string(m.Result), "from the catalog")
}

// keysOf returns m's keys.
func keysOf(m map[string]json.RawMessage) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestCatalogLockWrite: vigil -catalog-lock-write writes the lock of what
// the pinned upstream serves, once it is ready, and exits 0; vigil then
// serves with that lock.
func TestCatalogLockWrite(t *testing.T) {
	everything := everythingServer(t)
	dir := t.TempDir()
	file, lock := filepath.Join(dir, "catalog.yaml"), filepath.Join(dir, "catalog.lock")
	require.NoError(t, os.WriteFile(file, []byte("upstreams:\n  everything:\n    pin: hold\n    tools:\n      echo: {name: say}\n"), 0o600))
	out, err := exec.Command(vigilBin, "-http", "127.0.0.1:0", "-catalog", file, "-catalog-lock", lock, "-catalog-lock-write",
		"-upstream", "everything=node "+everything).CombinedOutput()
	require.NoError(t, err, "%s", out)
	written, err := os.ReadFile(lock)
	require.NoError(t, err)
	var l struct {
		Tools map[string]struct {
			Upstream, Digest string
		} `json:"tools"`
	}
	require.NoError(t, json.Unmarshal(written, &l))
	require.Contains(t, l.Tools, "say", "by served name")
	assert.Equal(t, "everything", l.Tools["say"].Upstream)
	assert.True(t, strings.HasPrefix(l.Tools["say"].Digest, "sha256:"))
	assert.NotContains(t, l.Tools, "echo")

	svc := startService(t, "-http", "127.0.0.1:0", "-catalog", file, "-catalog-lock", lock, "-upstream", "everything=node "+everything)
	hc := &http.Client{Timeout: 30 * time.Second}
	defer hc.CloseIdleConnections()
	svcEventually(t, "vigil is ready", 60*time.Second, func() (bool, error) {
		resp, err := hc.Get(svc.base + "/readyz")
		if err != nil {
			return false, err
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	assert.NotContains(t, svc.logs.String(), "catalog pin:", "every definition served is the lock's")
}

// TestCatalogFlagsRefused: the catalog flags without what they need, and
// a catalog file that is refused, stop vigil at start, naming the line.
func TestCatalogFlagsRefused(t *testing.T) {
	noEnv := func(string) string { return "" }
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("upstreams:\n  e:\n    pins: warn\n"), 0o600))
	unknown := filepath.Join(dir, "unknown.yaml")
	require.NoError(t, os.WriteFile(unknown, []byte("upstreams:\n  e: {}\n  g: {}\n"), 0o600))
	for want, args := range map[string][]string{
		"-catalog: need -upstream":                          {"-catalog", bad},
		"-catalog-lock: need -catalog":                      {"-upstream", "e=run", "-catalog-lock", "l"},
		"-catalog-lock-write: need -catalog-lock":           {"-upstream", "e=run", "-catalog", bad, "-catalog-lock-write"},
		`line 3: unknown key "pins"`:                        {"-upstream", "e=run", "-catalog", bad},
		"-catalog: open " + filepath.Join(dir, "none.yaml"): {"-upstream", "e=run", "-catalog", filepath.Join(dir, "none.yaml")},
	} {
		_, err := parseConfig(args, noEnv, io.Discard)
		require.Error(t, err, args)
		assert.Contains(t, err.Error(), want)
	}
	cfg, err := parseConfig([]string{"-upstream", "e=run", "-catalog", unknown}, noEnv, io.Discard)
	require.NoError(t, err, "the upstreams are checked at Mount")
	_, err = gateway.Mount(t.Context(), server.New(), upstreamConfig(cfg, nil))
	require.ErrorContains(t, err, `line 3: upstream "g" is not one the gateway fronts`)
}
