package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"net/http"
	"os"
	"path"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// skillsTestdata is the directory of skills the tests serve with -skills.
const skillsTestdata = "testdata/skills"

// checkSkillsServed checks, through c, that the skills of dir are served
// as the extension says: declared, listed with their frontmatter and a
// manifest of every file, each file reading back with its digest and size,
// unknown skills and non-directories refused with -32602. caps is the
// server's capabilities as the client learned them.
func checkSkillsServed(t *testing.T, c *svcClient, caps json.RawMessage, dir string) {
	t.Helper()
	var declared struct {
		Resources  json.RawMessage           `json:"resources"`
		Extensions map[string]map[string]any `json:"extensions"`
	}
	require.NoError(t, json.Unmarshal(caps, &declared))
	assert.NotNil(t, declared.Resources)
	assert.Equal(t, map[string]any{"directoryRead": true}, declared.Extensions["io.modelcontextprotocol/skills"])

	// The files on disk, by the URI they must have.
	onDisk := map[string][]byte{}
	require.NoError(t, fs.WalkDir(os.DirFS(dir), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path.Join(dir, p))
		onDisk["skill://"+p] = data
		return err
	}))

	id := 100
	call := func(method, params string) svcMessage {
		t.Helper()
		id++
		m, err := c.rpc(strconv.Itoa(id), method, params)
		require.NoError(t, err)
		return m
	}
	m := call("skills/list", `{}`)
	require.Nil(t, m.Error)
	var list struct {
		Skills []struct {
			URI         string          `json:"uri"`
			Frontmatter map[string]any  `json:"frontmatter"`
			Resources   json.RawMessage `json:"resources"`
		} `json:"skills"`
		ResultType string `json:"resultType"`
		TTLMs      *int64 `json:"ttlMs"`
		CacheScope string `json:"cacheScope"`
	}
	require.NoError(t, json.Unmarshal(m.Result, &list))
	assert.Equal(t, "complete", list.ResultType)
	assert.NotNil(t, list.TTLMs)
	assert.NotEmpty(t, list.CacheScope)
	require.NotEmpty(t, list.Skills)
	seen := map[string]bool{}
	for _, sk := range list.Skills {
		name := path.Base(path.Dir(strings.TrimPrefix(sk.URI, "skill://")))
		assert.Equal(t, name, sk.Frontmatter["name"], "the last segment is the name")
		assert.NotEmpty(t, sk.Frontmatter["description"])

		g := call("skills/get", `{"uri":"`+sk.URI+`"}`)
		require.Nil(t, g.Error)
		var got struct {
			Skill json.RawMessage `json:"skill"`
		}
		require.NoError(t, json.Unmarshal(g.Result, &got))
		entry, _ := json.Marshal(sk) // decoded from JSON: encodes
		assert.JSONEq(t, string(entry), string(got.Skill), "skills/get and skills/list agree")

		var files []struct {
			URI    string `json:"uri"`
			Digest string `json:"digest"`
			Size   int    `json:"size"`
		}
		require.NoError(t, json.Unmarshal(sk.Resources, &files))
		for _, f := range files {
			seen[f.URI] = true
			r := call("resources/read", `{"uri":"`+f.URI+`"}`)
			require.Nil(t, r.Error, f.URI)
			var read struct {
				Contents []struct {
					Text *string `json:"text"`
					Blob *string `json:"blob"`
				} `json:"contents"`
			}
			require.NoError(t, json.Unmarshal(r.Result, &read))
			require.Len(t, read.Contents, 1)
			var data []byte
			if b := read.Contents[0].Blob; b != nil {
				var err error
				data, err = base64.StdEncoding.DecodeString(*b)
				require.NoError(t, err)
			} else {
				data = []byte(*read.Contents[0].Text)
			}
			sum := sha256.Sum256(data)
			assert.Equal(t, "sha256:"+hex.EncodeToString(sum[:]), f.Digest, f.URI)
			assert.Len(t, data, f.Size, f.URI)
			assert.True(t, bytes.Equal(onDisk[f.URI], data), "%s reads as on disk", f.URI)
		}
	}
	for uri := range onDisk {
		assert.True(t, seen[uri], "%s is in a manifest", uri)
	}

	m = call("skills/get", `{"uri":"skill://acme/billing/chargebacks/SKILL.md"}`)
	require.NotNil(t, m.Error)
	assert.Equal(t, int64(-32602), m.Error.Code)
	m = call("resources/directory/read", `{"uri":"skill://acme/billing/refunds"}`)
	require.Nil(t, m.Error)
	assert.Contains(t, string(m.Result), `"uri":"skill://acme/billing/refunds/examples","name":"examples","mimeType":"inode/directory"`)
	m = call("resources/directory/read", `{"uri":"skill://acme/billing/refunds/SKILL.md"}`)
	require.NotNil(t, m.Error)
	assert.Equal(t, int64(-32602), m.Error.Code)
}

// vigil -skills DIR serves the skills of DIR over Streamable HTTP, in a
// 2025-11-25 session and to stateless 2026-07-28 requests alike.
func TestServiceSkills(t *testing.T) {
	svc := startService(t, "-http", "127.0.0.1:0", "-skills", skillsTestdata)
	assert.Contains(t, svc.logs.String(), `msg="serving skills" dir=testdata/skills skills="[acme/billing/refunds git-workflow]"`)
	hc := &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}
	defer hc.CloseIdleConnections()

	t.Run("2025-11-25", func(t *testing.T) {
		c := &svcClient{hc: hc, url: svc.base + "/mcp"}
		res, err := c.rpc(`0`, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"skills","version":"1"}}`)
		require.NoError(t, err)
		require.Nil(t, res.Error)
		require.NoError(t, c.notify("notifications/initialized"))
		var init struct {
			Capabilities json.RawMessage `json:"capabilities"`
		}
		require.NoError(t, json.Unmarshal(res.Result, &init))
		checkSkillsServed(t, c, init.Capabilities, skillsTestdata)
	})
	t.Run("2026-07-28", func(t *testing.T) {
		c := &svcClient{hc: hc, url: svc.base + "/mcp", modern: true}
		res, err := c.rpc(`0`, "server/discover", `{}`)
		require.NoError(t, err)
		require.Nil(t, res.Error)
		var d struct {
			Capabilities json.RawMessage `json:"capabilities"`
		}
		require.NoError(t, json.Unmarshal(res.Result, &d))
		checkSkillsServed(t, c, d.Capabilities, skillsTestdata)
	})
}

// Without -skills the extension is not declared; a -skills directory that
// does not hold valid skills stops vigil before it listens.
func TestRunSkillsDirectory(t *testing.T) {
	bad := t.TempDir()
	require.NoError(t, os.MkdirAll(path.Join(bad, "pdf"), 0o755))
	require.NoError(t, os.WriteFile(path.Join(bad, "pdf", "SKILL.md"), []byte("---\nname: other\ndescription: d\n---\n"), 0o600))
	for _, tt := range []struct{ dir, want string }{
		{bad, "must equal the last segment"},
		{t.TempDir(), "no SKILL.md"},
		{path.Join(bad, "missing"), "no such file"},
	} {
		var stderr bytes.Buffer
		err := run(t.Context(), []string{"-http", "127.0.0.1:0", "-skills", tt.dir}, func(string) string { return "" }, &stderr)
		require.ErrorContains(t, err, "-skills "+tt.dir)
		require.ErrorContains(t, err, tt.want)
	}
}
