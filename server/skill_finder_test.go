package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// The skill finder is asked for a skill no registered one serves when a
// client names it (skills/get, or reading its SKILL.md); what it finds is
// served unlisted, without announcing a list change, and kept, at most 64
// of them; nothing found answers as before, and its error fails the call.
func TestSkillFinder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := skillsServer(t).start()
		h.Initialize(protocol.Version20251125, nil)
		var mu sync.Mutex
		asked := map[string]int{}
		h.srv.SetSkillFinder(func(_ context.Context, path string) (*server.Skill, error) {
			mu.Lock()
			asked[path]++
			mu.Unlock()
			switch {
			case path == "broken/one":
				return nil, errors.New("the source failed")
			case !strings.HasPrefix(path, "found/"):
				return nil, nil
			}
			return &server.Skill{
				Frontmatter: "name: " + path[len("found/"):] + "\ndescription: Found when named",
				Generate: func(_ context.Context, file string) ([]byte, error) {
					if file == "SKILL.md" {
						return []byte("found body\n"), nil
					}
					return nil, server.ErrResourceNotFound
				},
			}, nil
		})

		var got struct {
			Skill struct {
				URI       string          `json:"uri"`
				Resources json.RawMessage `json:"resources"`
			} `json:"skill"`
		}
		require.NoError(t, json.Unmarshal(h.featureCall(1, "skills/get", map[string]any{"uri": "skill://found/a/SKILL.md"}), &got))
		assert.Equal(t, "skill://found/a/SKILL.md", got.Skill.URI)
		assert.JSONEq(t, `"dynamic"`, string(got.Skill.Resources))
		h.expectNothingPending(2) // no list_changed: the listing did not change

		read := string(h.featureCall(3, "resources/read", map[string]any{"uri": "skill://found/a/SKILL.md"}))
		assert.Contains(t, read, "found body")
		assert.Equal(t, 1, asked["found/a"], "kept once found")

		read = string(h.featureCall(4, "resources/read", map[string]any{"uri": "skill://found/b/SKILL.md"}))
		assert.Contains(t, read, "found body", "reading a SKILL.md finds its skill too")

		e := h.featureError(5, "skills/get", map[string]any{"uri": "skill://nowhere/x/SKILL.md"})
		assert.Equal(t, int64(protocol.CodeInvalidParams), e.Code)
		e = h.featureError(6, "skills/get", map[string]any{"uri": "skill://broken/one/SKILL.md"})
		assert.Equal(t, int64(protocol.CodeInternal), e.Code)
		e = h.featureError(7, "skills/get", map[string]any{"uri": "skill://found/../x/SKILL.md"})
		assert.Equal(t, int64(protocol.CodeInvalidParams), e.Code, "an invalid path is not asked for")

		var listed struct {
			Skills []struct {
				URI string `json:"uri"`
			} `json:"skills"`
		}
		require.NoError(t, json.Unmarshal(h.featureCall(8, "skills/list", map[string]any{}), &listed))
		for _, sk := range listed.Skills {
			assert.NotContains(t, sk.URI, "found/", "found skills are unlisted")
		}

		// 64 kept: the first found goes once 64 more are.
		for i := range 64 {
			h.featureCall(int64(100+i), "skills/get", map[string]any{"uri": fmt.Sprintf("skill://found/n%d/SKILL.md", i)})
		}
		h.featureCall(200, "skills/get", map[string]any{"uri": "skill://found/a/SKILL.md"})
		assert.Equal(t, 2, asked["found/a"], "evicted, so asked again")
		finish(t, h)
	})
}
