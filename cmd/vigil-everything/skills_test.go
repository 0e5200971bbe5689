package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The sample skills are served in both eras: listed with a manifest of
// every embedded file, each reading back with its digest; the dynamic
// skill only by skills/get, with "dynamic" resources.
func TestSkills(t *testing.T) {
	embedded := map[string][]byte{}
	require.NoError(t, fs.WalkDir(sampleSkills, "testdata/skills", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := sampleSkills.ReadFile(p)
		embedded["skill://"+strings.TrimPrefix(p, "testdata/skills/")] = data
		return err
	}))
	require.Len(t, embedded, 6)
	for _, e := range eras() {
		t.Run(e.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := startFixtures(t, e, nil)
				var list struct {
					Skills []struct {
						URI         string         `json:"uri"`
						Frontmatter map[string]any `json:"frontmatter"`
						Resources   []struct {
							URI    string `json:"uri"`
							Digest string `json:"digest"`
							Size   int    `json:"size"`
						} `json:"resources"`
					} `json:"skills"`
				}
				require.NoError(t, json.Unmarshal(c.call("skills/list", map[string]any{}), &list))
				require.Len(t, list.Skills, 2, "the dynamic skill is unlisted")
				assert.Equal(t, "skill://acme/billing/refunds/SKILL.md", list.Skills[0].URI)
				assert.Equal(t, map[string]any{"version": "2.1"}, list.Skills[0].Frontmatter["metadata"])
				assert.Equal(t, "skill://pdf-processing/SKILL.md", list.Skills[1].URI)
				seen := 0
				for _, sk := range list.Skills {
					for _, r := range sk.Resources {
						want, ok := embedded[r.URI]
						require.True(t, ok, r.URI)
						seen++
						sum := sha256.Sum256(want)
						assert.Equal(t, "sha256:"+hex.EncodeToString(sum[:]), r.Digest)
						assert.Len(t, want, r.Size)
						var read struct {
							Contents []struct {
								MIMEType string  `json:"mimeType"`
								Text     *string `json:"text"`
								Blob     []byte  `json:"blob"`
							} `json:"contents"`
						}
						require.NoError(t, json.Unmarshal(c.call("resources/read", map[string]any{"uri": r.URI}), &read))
						require.Len(t, read.Contents, 1)
						got := read.Contents[0].Blob
						if read.Contents[0].Text != nil {
							got = []byte(*read.Contents[0].Text)
						}
						assert.Equal(t, want, got, r.URI)
						if strings.HasSuffix(r.URI, ".png") {
							assert.Equal(t, "image/png", read.Contents[0].MIMEType)
							assert.Nil(t, read.Contents[0].Text, "binary as a blob")
						}
					}
				}
				assert.Equal(t, len(embedded), seen, "every file in a manifest")

				var got struct {
					Skill struct {
						Resources json.RawMessage `json:"resources"`
					} `json:"skill"`
				}
				require.NoError(t, json.Unmarshal(c.call("skills/get", map[string]any{"uri": dailyReportURI}), &got))
				assert.JSONEq(t, `"dynamic"`, string(got.Skill.Resources))
				var md struct {
					Contents []struct {
						Text string `json:"text"`
					} `json:"contents"`
				}
				require.NoError(t, json.Unmarshal(c.call("resources/read", map[string]any{"uri": dailyReportURI}), &md))
				require.Len(t, md.Contents, 1)
				assert.True(t, strings.HasPrefix(md.Contents[0].Text, "---\nname: daily\n"), md.Contents[0].Text)

				dir := string(c.call("resources/directory/read", map[string]any{"uri": "skill://pdf-processing/templates"}))
				assert.Contains(t, dir, `{"uri":"skill://pdf-processing/templates/invoice.md","name":"invoice.md","mimeType":"text/markdown","size":`)
				assert.Contains(t, dir, `"uri":"skill://pdf-processing/templates/stamp.png","name":"stamp.png","mimeType":"image/png"`)
				assert.Equal(t, int64(-32602), c.rpcError(c.send("skills/get", map[string]any{"uri": "skill://nope/SKILL.md"})).Code)
				c.stop()
			})
		})
	}
}
