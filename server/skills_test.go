package server_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"testing/fstest"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

const refundsMD = "---\nname: refunds\ndescription: Process customer refund requests per company policy\nlicense: Apache-2.0\nmetadata:\n  version: \"2.1\"\n  io.modelcontextprotocol/x: y\ncustom-field: [1, two]\nupdated: 2024-01-01\n---\n\n# Refunds\n\nSee `examples/email.md`.\n"

// skillFS is a tree of skills: a nested prefix, a skill nested in another,
// a binary file and a file whose name needs escaping.
func skillFS() fstest.MapFS {
	return fstest.MapFS{
		"acme/billing/refunds/SKILL.md":          {Data: []byte(refundsMD)},
		"acme/billing/refunds/examples/email.md": {Data: []byte("Dear customer,\n")},
		"acme/billing/refunds/scripts/run.py":    {Data: []byte("print('hi')\n")},
		"acme/billing/refunds/logo.png":          {Data: []byte{0x89, 'P', 'N', 'G', 0xff, 0x00}},
		"acme/billing/refunds/notes/a b.txt":     {Data: []byte("spaced\n")},
		"git-workflow/SKILL.md":                  {Data: []byte("---\nname: git-workflow\ndescription: Branch and commit conventions\n---\nUse topic branches.\n")},
		"git-workflow/inner/SKILL.md":            {Data: []byte("---\nname: inner\ndescription: A nested skill\n---\nNested.\n")},
	}
}

type skillEntry struct {
	URI         string          `json:"uri"`
	Frontmatter map[string]any  `json:"frontmatter"`
	Resources   json.RawMessage `json:"resources"`
}

type skillResource struct {
	URI    string `json:"uri"`
	Digest string `json:"digest"`
	Size   int    `json:"size"`
}

func (e skillEntry) files(t *testing.T) []skillResource {
	t.Helper()
	var rs []skillResource
	require.NoError(t, json.Unmarshal(e.Resources, &rs), "resources: %s", e.Resources)
	return rs
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// readBytes reads a resource and returns its raw bytes, from text or blob.
func readBytes(t *testing.T, h *harness, id int64, uri string) ([]byte, string) {
	t.Helper()
	var r struct {
		Contents []struct {
			URI      string  `json:"uri"`
			MIMEType string  `json:"mimeType"`
			Text     *string `json:"text"`
			Blob     *string `json:"blob"`
		} `json:"contents"`
	}
	require.NoError(t, json.Unmarshal(h.featureCall(id, "resources/read", map[string]any{"uri": uri}), &r))
	require.Len(t, r.Contents, 1)
	c := r.Contents[0]
	assert.Equal(t, uri, c.URI)
	if c.Blob != nil {
		b, err := base64.StdEncoding.DecodeString(*c.Blob)
		require.NoError(t, err)
		return b, c.MIMEType
	}
	require.NotNil(t, c.Text)
	return []byte(*c.Text), c.MIMEType
}

func TestSkillRules(t *testing.T) {
	t.Parallel()
	md := func(front string) fstest.MapFS {
		return fstest.MapFS{"SKILL.md": {Data: []byte("---\n" + front + "---\nbody\n")}}
	}
	ok := "name: pdf\ndescription: d\n"
	many := fstest.MapFS{"SKILL.md": {Data: []byte("---\n" + ok + "---\n")}}
	for i := range 512 {
		many[fmt.Sprintf("f/%03d.txt", i)] = &fstest.MapFile{Data: []byte("x")}
	}
	tests := []struct {
		name  string
		skill server.Skill
		want  string // "" for success
	}{
		{"valid", server.Skill{Path: "pdf", FS: md(ok)}, ""},
		{"valid nested prefix", server.Skill{Path: "acme/billing/pdf", FS: md(ok)}, ""},
		{"valid with optional fields", server.Skill{Path: "pdf", FS: md(ok + "license: MIT\ncompatibility: any\nallowed-tools: Read Bash\nmetadata: {a: b}\n")}, ""},
		{"crlf", server.Skill{Path: "pdf", FS: fstest.MapFS{"SKILL.md": {Data: []byte("---\r\nname: pdf\r\ndescription: d\r\n---\r\n")}}}, ""},
		{"no SKILL.md", server.Skill{Path: "pdf", FS: fstest.MapFS{"README.md": {Data: []byte("x")}}}, "no SKILL.md"},
		{"no frontmatter", server.Skill{Path: "pdf", FS: fstest.MapFS{"SKILL.md": {Data: []byte("# pdf\n")}}}, "must begin with YAML frontmatter"},
		{"unclosed frontmatter", server.Skill{Path: "pdf", FS: fstest.MapFS{"SKILL.md": {Data: []byte("---\nname: pdf\n")}}}, "not closed"},
		{"bad yaml", server.Skill{Path: "pdf", FS: md("name: [pdf\n")}, "frontmatter:"},
		{"frontmatter not a map", server.Skill{Path: "pdf", FS: md("- a\n")}, "frontmatter:"},
		{"no name", server.Skill{Path: "pdf", FS: md("description: d\n")}, "name must be a string"},
		{"name differs from path", server.Skill{Path: "acme/pdf", FS: md("name: other\ndescription: d\n")}, "must equal the last segment"},
		{"uppercase name", server.Skill{Path: "Pdf", FS: md("name: Pdf\ndescription: d\n")}, "lowercase"},
		{"leading hyphen", server.Skill{Path: "-pdf", FS: md("name: -pdf\ndescription: d\n")}, "hyphen"},
		{"trailing hyphen", server.Skill{Path: "pdf-", FS: md("name: pdf-\ndescription: d\n")}, "hyphen"},
		{"double hyphen", server.Skill{Path: "p--df", FS: md("name: p--df\ndescription: d\n")}, "hyphen"},
		{"name over 64", server.Skill{Path: strings.Repeat("a", 65), FS: md("name: " + strings.Repeat("a", 65) + "\ndescription: d\n")}, "lowercase"},
		{"no description", server.Skill{Path: "pdf", FS: md("name: pdf\n")}, "description"},
		{"blank description", server.Skill{Path: "pdf", FS: md("name: pdf\ndescription: \"  \"\n")}, "description"},
		{"description over 1024", server.Skill{Path: "pdf", FS: md("name: pdf\ndescription: " + strings.Repeat("d", 1025) + "\n")}, "description"},
		{"compatibility over 500", server.Skill{Path: "pdf", FS: md(ok + "compatibility: " + strings.Repeat("c", 501) + "\n")}, "compatibility"},
		{"license not a string", server.Skill{Path: "pdf", FS: md(ok + "license: [MIT]\n")}, "license"},
		{"metadata not strings", server.Skill{Path: "pdf", FS: md(ok + "metadata: {a: [1]}\n")}, "metadata"},
		{"frontmatter without a JSON form", server.Skill{Path: "pdf", FS: md(ok + "odd: .inf\n")}, "JSON"},
		{"duplicate key", server.Skill{Path: "pdf", FS: md(ok + "license: a\nlicense: b\n")}, "twice"},
		{"alias bomb", server.Skill{Path: "pdf", FS: md(ok + "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n")}, "aliases included"},
		{"empty path", server.Skill{FS: md(ok)}, "1 to 512 bytes"},
		{"dot-dot segment", server.Skill{Path: "../pdf", FS: md(ok)}, "segment"},
		{"empty segment", server.Skill{Path: "acme//pdf", FS: md(ok)}, "segment"},
		{"unsafe prefix", server.Skill{Path: "ac me/pdf", FS: md(ok)}, "only letters"},
		{"neither FS nor Generate", server.Skill{Path: "pdf"}, "exactly one"},
		{"both FS and Generate", server.Skill{Path: "pdf", FS: md(ok), Generate: func(context.Context, string) ([]byte, error) { return nil, nil }}, "exactly one"},
		{"Frontmatter on a static skill", server.Skill{Path: "pdf", FS: md(ok), Frontmatter: ok}, "dynamic skills"},
		{"dynamic without a valid frontmatter", server.Skill{Path: "pdf", Frontmatter: "name: pdf\n", Generate: func(context.Context, string) ([]byte, error) { return nil, nil }}, "description"},
		{"symbolic link", server.Skill{Path: "pdf", FS: fstest.MapFS{"SKILL.md": md(ok)["SKILL.md"], "l": {Mode: fs.ModeSymlink}}}, "not a regular file"},
		{"512 files", server.Skill{Path: "pdf", FS: func() fstest.MapFS { m := maps.Clone(many); delete(m, "f/511.txt"); return m }()}, ""},
		{"over 512 files", server.Skill{Path: "pdf", FS: many}, "over 512 files"},
		{"511 files and an empty directory", server.Skill{Path: "pdf", FS: func() fstest.MapFS {
			m := maps.Clone(many)
			delete(m, "f/511.txt")
			m["empty"] = &fstest.MapFile{Mode: fs.ModeDir}
			return m
		}()}, "over 512 files"},
		{"over 512 empty directories", server.Skill{Path: "pdf", FS: func() fstest.MapFS {
			m := md(ok)
			for i := range 600 {
				m[fmt.Sprintf("d%03d", i)] = &fstest.MapFile{Mode: fs.ModeDir}
			}
			return m
		}()}, "over 512 files"},
		{"file URI over 2048 bytes", server.Skill{Path: "pdf", FS: fstest.MapFS{"SKILL.md": md(ok)["SKILL.md"], strings.Repeat(strings.Repeat("d", 200)+"/", 11) + "f": {Data: []byte("x")}}}, "over 2048 bytes"},
		{"over 16 MiB", server.Skill{Path: "pdf", FS: fstest.MapFS{"SKILL.md": md(ok)["SKILL.md"], "big.bin": {Data: make([]byte, 16<<20)}}}, "over 16777216 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := server.New()
			err := srv.AddSkill(tt.skill)
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.Empty(t, srv.RemoveSkills(tt.skill.Path), "nothing registered")
		})
	}
}

// skillsServer serves skillFS, an unlisted skill and a dynamic one.
func skillsServer(t *testing.T, opts ...server.Option) *harness {
	h := newHarness(t, opts...)
	paths, err := h.srv.AddSkills(skillFS())
	require.NoError(t, err)
	assert.Equal(t, []string{"acme/billing/refunds", "git-workflow", "git-workflow/inner"}, paths)
	require.NoError(t, h.srv.AddSkill(server.Skill{
		Path: "hidden/secret-sauce", Unlisted: true,
		FS: fstest.MapFS{"SKILL.md": {Data: []byte("---\nname: secret-sauce\ndescription: Not listed\n---\n")}},
	}))
	require.NoError(t, h.srv.AddSkill(server.Skill{
		Path: "reports/daily", Frontmatter: "name: daily\ndescription: Today's report",
		Generate: func(_ context.Context, file string) ([]byte, error) {
			if file == "SKILL.md" {
				return []byte("generated body\n"), nil
			}
			if file == "data/today.csv" {
				return []byte("a,b\n"), nil
			}
			return nil, server.ErrResourceNotFound
		},
	}))
	return h
}

func TestSkillsSessionEra(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := skillsServer(t, server.WithPageSize(2)).start()
		init := h.Initialize(protocol.Version20251125, nil)
		var caps struct {
			Resources  json.RawMessage           `json:"resources"`
			Extensions map[string]map[string]any `json:"extensions"`
		}
		require.NoError(t, json.Unmarshal(init.Capabilities, &caps))
		assert.NotNil(t, caps.Resources, "the extension needs the resources capability")
		assert.Equal(t, map[string]any{"directoryRead": true}, caps.Extensions[server.ExtensionSkills])

		// skills/list, page by page (2 per page): every listed skill once.
		var entries []skillEntry
		cursor := ""
		for id := int64(10); ; id++ {
			params := map[string]any{}
			if cursor != "" {
				params["cursor"] = cursor
			}
			var page struct {
				Skills     []skillEntry `json:"skills"`
				NextCursor string       `json:"nextCursor"`
				ResultType string       `json:"resultType"`
				TTLMs      *int64       `json:"ttlMs"`
				CacheScope string       `json:"cacheScope"`
			}
			require.NoError(t, json.Unmarshal(h.featureCall(id, "skills/list", params), &page))
			assert.LessOrEqual(t, len(page.Skills), 2)
			assert.Equal(t, "complete", page.ResultType)
			assert.NotNil(t, page.TTLMs)
			assert.NotEmpty(t, page.CacheScope)
			entries = append(entries, page.Skills...)
			if cursor = page.NextCursor; cursor == "" {
				break
			}
		}
		uris := make([]string, len(entries))
		for i, e := range entries {
			uris[i] = e.URI
		}
		assert.Equal(t, []string{
			"skill://acme/billing/refunds/SKILL.md", "skill://git-workflow/SKILL.md",
			"skill://git-workflow/inner/SKILL.md", "skill://reports/daily/SKILL.md",
		}, uris, "the unlisted skill is not listed")

		// The frontmatter verbatim, every field.
		assert.Equal(t, map[string]any{
			"name": "refunds", "description": "Process customer refund requests per company policy", "license": "Apache-2.0",
			"metadata": map[string]any{"version": "2.1", "io.modelcontextprotocol/x": "y"}, "custom-field": []any{1.0, "two"}, "updated": "2024-01-01",
		}, entries[0].Frontmatter)

		// The manifest is complete, and every file reads back with its digest and size.
		fsys := skillFS()
		refunds := entries[0].files(t)
		want := map[string]string{
			"skill://acme/billing/refunds/SKILL.md":          "acme/billing/refunds/SKILL.md",
			"skill://acme/billing/refunds/examples/email.md": "acme/billing/refunds/examples/email.md",
			"skill://acme/billing/refunds/logo.png":          "acme/billing/refunds/logo.png",
			"skill://acme/billing/refunds/notes/a%20b.txt":   "acme/billing/refunds/notes/a b.txt",
			"skill://acme/billing/refunds/scripts/run.py":    "acme/billing/refunds/scripts/run.py",
		}
		require.Len(t, refunds, len(want))
		mimes := map[string]string{}
		for i, r := range refunds {
			name, ok := want[r.URI]
			require.True(t, ok, "unexpected %s", r.URI)
			data := fsys[name].Data
			assert.Equal(t, digest(data), r.Digest)
			assert.Equal(t, len(data), r.Size)
			got, mime := readBytes(t, h, int64(100+i), r.URI)
			assert.Equal(t, data, got, "resources/read returns the digested bytes")
			mimes[name] = mime
		}
		assert.Equal(t, "text/markdown", mimes["acme/billing/refunds/SKILL.md"])
		assert.Equal(t, "image/png", mimes["acme/billing/refunds/logo.png"])
		assert.Equal(t, "text/x-python", mimes["acme/billing/refunds/scripts/run.py"])

		// The enclosing skill lists its nested skill's files too.
		var gw []string
		for _, r := range entries[1].files(t) {
			gw = append(gw, r.URI)
		}
		assert.Equal(t, []string{"skill://git-workflow/SKILL.md", "skill://git-workflow/inner/SKILL.md"}, gw)
		assert.JSONEq(t, `"dynamic"`, string(entries[3].Resources))

		// skills/get: listed, unlisted; an unknown skill is -32602.
		var got struct {
			Skill      skillEntry `json:"skill"`
			ResultType string     `json:"resultType"`
		}
		require.NoError(t, json.Unmarshal(h.featureCall(200, "skills/get", map[string]any{"uri": "skill://hidden/secret-sauce/SKILL.md"}), &got))
		assert.Equal(t, "secret-sauce", got.Skill.Frontmatter["name"])
		assert.Equal(t, "complete", got.ResultType)
		e := h.featureError(201, "skills/get", map[string]any{"uri": "skill://acme/billing/chargebacks/SKILL.md"})
		assert.Equal(t, int64(protocol.CodeInvalidParams), e.Code)
		assert.Equal(t, "No skill is served at skill://acme/billing/chargebacks/SKILL.md", e.Message)
		e = h.featureError(202, "skills/get", map[string]any{"uri": "skill://acme/billing/refunds/examples/email.md"})
		assert.Equal(t, int64(protocol.CodeInvalidParams), e.Code, "a file, not a SKILL.md")

		// The dynamic skill's files are generated; SKILL.md gets its frontmatter.
		body, mime := readBytes(t, h, 203, "skill://reports/daily/SKILL.md")
		assert.Equal(t, "---\nname: daily\ndescription: Today's report\n---\ngenerated body\n", string(body))
		assert.Equal(t, "text/markdown", mime)
		body, mime = readBytes(t, h, 204, "skill://reports/daily/data/today.csv")
		assert.Equal(t, "a,b\n", string(body))
		assert.Equal(t, "text/csv", mime)
		e = h.featureError(205, "resources/read", map[string]any{"uri": "skill://reports/daily/nope.md"})
		assert.Equal(t, int64(protocol.CodeResourceNotFound), e.Code)

		// resources/list shows the listed skills' files, not the unlisted one's.
		var listed []string
		cursor = ""
		for id := int64(300); ; id++ {
			var page struct {
				Resources []struct {
					URI  string `json:"uri"`
					Name string `json:"name"`
				} `json:"resources"`
				NextCursor string `json:"nextCursor"`
			}
			require.NoError(t, json.Unmarshal(h.featureCall(id, "resources/list", map[string]any{"cursor": cursor}), &page))
			for _, r := range page.Resources {
				listed = append(listed, r.URI+" "+r.Name)
			}
			if cursor = page.NextCursor; cursor == "" {
				break
			}
		}
		assert.Equal(t, []string{
			"skill://acme/billing/refunds/SKILL.md refunds", "skill://git-workflow/SKILL.md git-workflow",
			"skill://git-workflow/inner/SKILL.md inner", "skill://reports/daily/SKILL.md daily",
		}, listed, "each listed skill's SKILL.md, named by its frontmatter; the other files are read by URI")
		h.finish()
	})
}

func TestSkillsDirectoryRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := skillsServer(t).start()
		h.Initialize(protocol.Version20251125, nil)
		dir := func(id int64, uri string) []string {
			var r struct {
				ResultType string `json:"resultType"`
				Resources  []struct {
					URI      string `json:"uri"`
					Name     string `json:"name"`
					MIMEType string `json:"mimeType"`
				} `json:"resources"`
			}
			require.NoError(t, json.Unmarshal(h.featureCall(id, "resources/directory/read", map[string]any{"uri": uri}), &r))
			assert.Equal(t, "complete", r.ResultType)
			out := make([]string, len(r.Resources))
			for i, c := range r.Resources {
				out[i] = c.URI + " " + c.MIMEType
			}
			return out
		}
		assert.Equal(t, []string{
			"skill://acme/billing/refunds/SKILL.md text/markdown",
			"skill://acme/billing/refunds/examples inode/directory",
			"skill://acme/billing/refunds/logo.png image/png",
			"skill://acme/billing/refunds/notes inode/directory",
			"skill://acme/billing/refunds/scripts inode/directory",
		}, dir(1, "skill://acme/billing/refunds"))
		assert.Equal(t, []string{"skill://acme/billing/refunds/notes/a%20b.txt text/plain"}, dir(2, "skill://acme/billing/refunds/notes"))
		assert.Equal(t, []string{"skill://acme/billing/refunds inode/directory"}, dir(3, "skill://acme/billing"), "prefixes are directories")
		assert.Equal(t, []string{"skill://reports/daily/SKILL.md text/markdown"}, dir(4, "skill://reports/daily"))
		assert.Equal(t, []string{"skill://hidden/secret-sauce/SKILL.md text/markdown"}, dir(5, "skill://hidden/secret-sauce"), "an unlisted skill's own directory")
		assert.Equal(t, []string{
			"skill://git-workflow/SKILL.md text/markdown", "skill://git-workflow/inner inode/directory",
		}, dir(6, "skill://git-workflow"))
		for range 20 { // the nested SKILL.md is its own skill's, whatever the map order
			var r struct {
				Resources []struct {
					Name string `json:"name"`
				} `json:"resources"`
			}
			require.NoError(t, json.Unmarshal(h.featureCall(9, "resources/directory/read", map[string]any{"uri": "skill://git-workflow/inner"}), &r))
			require.Len(t, r.Resources, 1)
			assert.Equal(t, "inner", r.Resources[0].Name)
			require.NoError(t, h.srv.AddSkill(server.Skill{Path: "zz", FS: fstest.MapFS{"SKILL.md": {Data: []byte("---\nname: zz\ndescription: d\n---\n")}}})) // re-index
		}

		e := h.featureError(7, "resources/directory/read", map[string]any{"uri": "skill://acme/billing/refunds/SKILL.md"})
		assert.Equal(t, int64(protocol.CodeInvalidParams), e.Code)
		assert.Equal(t, "skill://acme/billing/refunds/SKILL.md is not a directory resource", e.Message)
		e = h.featureError(8, "resources/directory/read", map[string]any{"uri": "skill://hidden"})
		assert.Equal(t, int64(protocol.CodeInvalidParams), e.Code, "an unlisted skill's prefix does not reveal it")
		h.finish()
	})
}

func TestSkillsBadInput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := skillsServer(t).start()
		h.Initialize(protocol.Version20251125, nil)
		long := "skill://" + strings.Repeat("a", 3000) + "/SKILL.md"
		for i, c := range []struct {
			method string
			params any
		}{
			{"skills/get", map[string]any{"uri": long}},
			{"resources/directory/read", map[string]any{"uri": long}},
			{"skills/get", map[string]any{}},
			{"skills/get", []int{1}},
			{"skills/get", map[string]any{"uri": 5}},
			{"skills/list", map[string]any{"cursor": strings.Repeat("c", 5000)}},
			{"skills/list", map[string]any{"cursor": "bogus"}},
			{"skills/list", []int{1}},
			{"resources/directory/read", map[string]any{"uri": "skill://acme/billing/refunds", "cursor": "bogus"}},
			{"resources/directory/read", map[string]any{}},
		} {
			e := h.featureError(int64(i+1), c.method, c.params)
			assert.Equal(t, int64(protocol.CodeInvalidParams), e.Code, "%s %v", c.method, c.params)
			assert.Less(t, len(e.Message), 200, "the error does not echo an unbounded input")
		}
		h.finish()
	})
}

func TestSkillsStatelessEra(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := skillsServer(t, server.WithCacheHints(time.Minute, "public")).start()
		meta := map[string]any{"_meta": meta2026(nil)}
		var d struct {
			Capabilities struct {
				Resources  json.RawMessage `json:"resources"`
				Extensions map[string]any  `json:"extensions"`
			} `json:"capabilities"`
		}
		require.NoError(t, json.Unmarshal(h.featureCall(1, "server/discover", meta), &d))
		assert.NotNil(t, d.Capabilities.Resources)
		assert.Equal(t, map[string]any{"directoryRead": true}, d.Capabilities.Extensions[server.ExtensionSkills])

		raw := h.featureCall(2, "skills/list", meta)
		var fields map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(raw, &fields))
		assert.JSONEq(t, `"complete"`, string(fields["resultType"]))
		assert.JSONEq(t, `60000`, string(fields["ttlMs"]))
		assert.JSONEq(t, `"public"`, string(fields["cacheScope"]))
		assert.Equal(t, 1, strings.Count(string(raw), `"ttlMs"`), "no member twice: %s", raw)
		assert.Contains(t, fields, "_meta")

		raw = h.featureCall(3, "skills/get", map[string]any{"_meta": meta2026(nil), "uri": "skill://git-workflow/SKILL.md"})
		assert.Equal(t, 1, strings.Count(string(raw), `"resultType"`), "%s", raw)
		assert.Contains(t, string(raw), `"digest":"sha256:`)
		e := h.featureError(4, "skills/get", map[string]any{"_meta": meta2026(nil), "uri": "skill://nope/SKILL.md"})
		assert.Equal(t, int64(protocol.CodeInvalidParams), e.Code)
		b := h.featureCall(5, "resources/directory/read", map[string]any{"_meta": meta2026(nil), "uri": "skill://git-workflow"})
		assert.Contains(t, string(b), `"resultType":"complete"`)
		h.finish()
	})
}

func TestNoSkillsNoExtension(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t).start()
		d := h.featureCall(1, "server/discover", map[string]any{"_meta": meta2026(nil)})
		assert.NotContains(t, string(d), server.ExtensionSkills)
		assert.NotContains(t, string(d), `"resources"`)
		for i, m := range []string{"skills/list", "skills/get", "resources/directory/read"} {
			e := h.featureError(int64(10+i), m, map[string]any{"_meta": meta2026(nil), "uri": "skill://a/SKILL.md"})
			assert.Equal(t, int64(protocol.CodeMethodNotFound), e.Code, m)
		}
		h.finish()
	})
}

func TestSkillsListChanged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, server.WithListChangedDelay(10*time.Millisecond)).start()
		init := h.Initialize(protocol.Version20251125, nil)
		assert.NotContains(t, string(init.Capabilities), server.ExtensionSkills)
		_, err := h.srv.AddSkills(skillFS())
		require.NoError(t, err)
		m, ok := h.Recv().(*transport.Request)
		require.True(t, ok)
		assert.Equal(t, "notifications/resources/list_changed", m.Method)

		// Replacing a skill changes its entry.
		require.NoError(t, h.srv.AddSkill(server.Skill{Path: "git-workflow", FS: fstest.MapFS{
			"SKILL.md": {Data: []byte("---\nname: git-workflow\ndescription: v2\n---\n")},
		}}))
		m, ok = h.Recv().(*transport.Request)
		require.True(t, ok)
		assert.Equal(t, "notifications/resources/list_changed", m.Method)
		var got struct {
			Skill skillEntry `json:"skill"`
		}
		require.NoError(t, json.Unmarshal(h.featureCall(1, "skills/get", map[string]any{"uri": "skill://git-workflow/SKILL.md"}), &got))
		assert.Equal(t, "v2", got.Skill.Frontmatter["description"])

		assert.Equal(t, 3, h.srv.RemoveSkills("git-workflow", "git-workflow/inner", "acme/billing/refunds", "nope"))
		m, ok = h.Recv().(*transport.Request)
		require.True(t, ok)
		assert.Equal(t, "notifications/resources/list_changed", m.Method)
		e := h.featureError(2, "skills/get", map[string]any{"uri": "skill://git-workflow/SKILL.md"})
		assert.Equal(t, int64(protocol.CodeMethodNotFound), e.Code, "with no skill left, the extension is no longer declared")
		assert.Zero(t, h.srv.RemoveSkills("git-workflow"))
		h.finish()
	})
}

func TestAddSkillsAtomic(t *testing.T) {
	t.Parallel()
	srv := server.New()
	fsys := skillFS()
	fsys["bad/SKILL.md"] = &fstest.MapFile{Data: []byte("---\nname: wrong\ndescription: d\n---\n")}
	_, err := srv.AddSkills(fsys)
	require.ErrorContains(t, err, "must equal the last segment")
	assert.Zero(t, srv.RemoveSkills("git-workflow"), "nothing was registered")

	_, err = srv.AddSkills(fstest.MapFS{"SKILL.md": {Data: []byte("---\nname: x\ndescription: d\n---\n")}})
	require.ErrorContains(t, err, "at the root")

	paths, err := srv.AddSkills(fstest.MapFS{
		"a/b/SKILL.md": {Data: []byte("---\nname: b\ndescription: d\n---\n")},
		"a-c/SKILL.md": {Data: []byte("---\nname: a-c\ndescription: d\n---\n")},
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"a-c", "a/b"}, paths, "sorted as strings")
}

// Hidden files and directories (.git, .env) are neither served nor listed
// in a manifest, and no skill is found inside a hidden directory.
func TestSkillsHiddenFilesNotServed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		front := []byte("---\nname: pdf\ndescription: d\n---\nbody\n")
		paths, err := h.srv.AddSkills(fstest.MapFS{
			"tools/pdf/SKILL.md":         {Data: front},
			"tools/pdf/forms.md":         {Data: []byte("forms")},
			"tools/pdf/.env":             {Data: []byte("API_KEY=secret")},
			"tools/pdf/.git/config":      {Data: []byte("[remote]")},
			"tools/pdf/sub/.DS_Store":    {Data: []byte{0}},
			".cache/old/pdf/SKILL.md":    {Data: front},
			"tools/.hidden/pdf/SKILL.md": {Data: front},
		})
		require.NoError(t, err)
		assert.Equal(t, []string{"tools/pdf"}, paths, "no skill found inside a hidden directory")

		h.start().Initialize(protocol.Version20251125, nil)
		var got struct {
			Skill struct {
				Resources []struct {
					URI string `json:"uri"`
				} `json:"resources"`
			} `json:"skill"`
		}
		require.NoError(t, json.Unmarshal(h.featureCall(2, "skills/get", map[string]any{"uri": "skill://tools/pdf/SKILL.md"}), &got))
		var uris []string
		for _, r := range got.Skill.Resources {
			uris = append(uris, r.URI)
		}
		assert.Equal(t, []string{"skill://tools/pdf/SKILL.md", "skill://tools/pdf/forms.md"}, uris, "the manifest holds no hidden file")
		for id, uri := range []string{"skill://tools/pdf/.env", "skill://tools/pdf/.git/config", "skill://tools/pdf/sub/.DS_Store"} {
			assert.NotZero(t, h.featureError(int64(10+id), "resources/read", map[string]any{"uri": uri}).Code, "%s is not served", uri)
		}
	})
}

// In 2026-07-28, a subscriptions/listen stream that asked for resource
// list changes hears of a skill added or removed.
func TestSkillsListChangedStateless(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := skillsServer(t, server.WithListChangedDelay(10*time.Millisecond)).start()
		h.Request(7, "subscriptions/listen", map[string]any{"_meta": meta2026(nil), "notifications": map[string]any{"resourcesListChanged": true}})
		ack := h.notification()
		assert.JSONEq(t, `{"notifications":{"resourcesListChanged":true},"_meta":{"io.modelcontextprotocol/subscriptionId":7}}`, string(ack.Params))
		assert.Equal(t, 1, h.srv.RemoveSkills("git-workflow/inner"))
		n := h.notification()
		assert.Equal(t, "notifications/resources/list_changed", n.Method)
		assert.JSONEq(t, `{"_meta":{"io.modelcontextprotocol/subscriptionId":7}}`, string(n.Params))
		require.NoError(t, h.Close())
		require.NoError(t, h.Wait())
	})
}

// Skills change while clients read them: every read sees one whole
// registration or the other (run with -race).
func TestSkillsConcurrentChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := skillsServer(t).start()
		h.Initialize(protocol.Version20251125, nil)
		release := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			<-release
			for i := range 20 {
				desc := fmt.Sprintf("v%d", i)
				_ = h.srv.AddSkill(server.Skill{Path: "git-workflow", FS: fstest.MapFS{
					"SKILL.md": {Data: []byte("---\nname: git-workflow\ndescription: " + desc + "\n---\n")},
				}})
			}
		}()
		close(release)
		for i := range 20 {
			var got struct {
				Skill skillEntry `json:"skill"`
			}
			require.NoError(t, json.Unmarshal(h.featureCall(int64(i+1), "skills/get", map[string]any{"uri": "skill://git-workflow/SKILL.md"}), &got))
			want := 1 // a replacement: SKILL.md alone
			if got.Skill.Frontmatter["description"] == "Branch and commit conventions" {
				want = 2 // the original, with its nested skill's SKILL.md
			}
			assert.Len(t, got.Skill.files(t), want, "the manifest and the frontmatter are of one registration")
		}
		<-done
		h.finish()
	})
}

// FuzzSkillFrontmatter: no SKILL.md makes registration panic or hang.
func FuzzSkillFrontmatter(f *testing.F) {
	f.Add([]byte(refundsMD))
	f.Add([]byte("---\nname: x\ndescription: d\n---\n"))
	f.Add([]byte("---\na: &a [1]\nb: [*a, *a]\n---\n"))
	f.Add([]byte("---\r\n---\r\n"))
	f.Fuzz(func(t *testing.T, md []byte) {
		srv := server.New()
		if err := srv.AddSkill(server.Skill{Path: "x", FS: fstest.MapFS{"SKILL.md": {Data: md}}}); err == nil {
			assert.Equal(t, 1, srv.RemoveSkills("x"), "registered whole")
		}
	})
}

// A hard link in a skill directory (a file of the directory that is also
// a file elsewhere, such as /etc/shadow) is refused at registration, as a
// symbolic link is.
func TestSkillHardLinkRefused(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("link counts are read on Unix")
	}
	outside, dir := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: pdf\ndescription: d\n---\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("not for clients"), 0o600))
	require.NoError(t, os.Link(filepath.Join(outside, "secret"), filepath.Join(dir, "notes.txt")))

	srv := server.New()
	err := srv.AddSkill(server.Skill{Path: "pdf", FS: os.DirFS(dir)})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "notes.txt: a hard link")
	assert.Zero(t, srv.RemoveSkills("pdf"), "nothing registered")

	require.NoError(t, os.Remove(filepath.Join(outside, "secret")))
	require.NoError(t, srv.AddSkill(server.Skill{Path: "pdf", FS: os.DirFS(dir)}), "a file of one name is served")
}

// The skills of a server hold 64 MiB of files at most, however many
// skills there are: AddSkills stops reading once over it, and AddSkill of
// one more skill fails, while replacing a skill counts it once.
func TestSkillsTotalBound(t *testing.T) {
	t.Parallel()
	big := make([]byte, 15<<20) // under the 16 MiB of one skill
	skill := func(name string) fstest.MapFS {
		return fstest.MapFS{
			"SKILL.md": {Data: []byte("---\nname: " + name + "\ndescription: d\n---\n")},
			"big.bin":  {Data: big},
		}
	}
	tree := fstest.MapFS{}
	for i := range 5 {
		for name, f := range skill(fmt.Sprintf("s%d", i)) {
			tree[fmt.Sprintf("s%d/%s", i, name)] = f
		}
	}
	srv := server.New()
	_, err := srv.AddSkills(tree)
	require.Error(t, err, "5 × 15 MiB is over 64 MiB")
	assert.Contains(t, err.Error(), "over 67108864 bytes, the limit of all the skills")
	assert.Zero(t, srv.RemoveSkills("s0", "s1", "s2", "s3", "s4"), "nothing registered")

	for i := range 4 {
		require.NoError(t, srv.AddSkill(server.Skill{Path: fmt.Sprintf("s%d", i), FS: skill(fmt.Sprintf("s%d", i))}))
	}
	err = srv.AddSkill(server.Skill{Path: "s4", FS: skill("s4")})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the limit of all the skills")
	require.NoError(t, srv.AddSkill(server.Skill{Path: "s3", FS: skill("s3")}), "a replaced skill is not counted twice")
}
