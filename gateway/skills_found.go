package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing/fstest"

	"github.com/vigil-mcp/vigil/gateway/internal/upstream"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
)

// Skills an upstream serves unlisted are in no listing to copy: the
// gateway's server asks for one when a client names it
// (server.SetSkillFinder). The upstream's skills/get says whether it
// serves it: a skill with a manifest is copied as a listed one is; a
// dynamic one is served by reading each of its files upstream when a
// client reads it.

// declaresSkills reports whether the upstream of session s declared the
// skills extension.
func declaresSkills(s *upstream.Session) bool {
	var caps struct {
		Extensions map[string]json.RawMessage `json:"extensions"`
	}
	return json.Unmarshal(s.Initialized().Capabilities, &caps) == nil && caps.Extensions[server.ExtensionSkills] != nil
}

// findSkill is the gateway's skill finder (server.SetSkillFinder): the skill at path of the first
// upstream that serves one there.
func (g *Gateway) findSkill(ctx context.Context, path string) (*server.Skill, error) {
	for _, m := range g.mounts {
		if sk, err := m.findSkill(ctx, path); sk != nil || err != nil {
			return sk, err
		}
	}
	return nil, nil
}

// findSkill asks the upstream, on the listing session, for the skill at
// path: nil when it serves none there (or does not serve skills).
func (m *mount) findSkill(ctx context.Context, path string) (*server.Skill, error) {
	s := m.catalog.live()
	if s == nil || !declaresSkills(s) {
		return nil, nil
	}
	uri := skillScheme + path + "/SKILL.md"
	params, _ := json.Marshal(map[string]string{"uri": uri}) // a string map encodes
	raw, err := s.Call(ctx, "skills/get", params, nil)
	if rpc := (*transport.Error)(nil); errors.As(err, &rpc) {
		return nil, nil // it serves no skill there
	}
	if err != nil {
		return nil, m.callError(ctx, err)
	}
	var got struct {
		Skill struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Resources   json.RawMessage `json:"resources"`
		} `json:"skill"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		return nil, badResult(err)
	}
	if string(bytes.TrimSpace(got.Skill.Resources)) != `"dynamic"` {
		return m.copySkill(ctx, s, path, got.Skill.Resources, &skillBudget{files: maxSkillFiles, bytes: maxSkillBytes})
	}
	md, err := m.readSkillFile(ctx, s, uri)
	if err != nil {
		return nil, m.callError(ctx, err)
	}
	front, _ := splitFrontmatter(md)
	if front == "" {
		front = "name: " + strconv.Quote(got.Skill.Name) + "\ndescription: " + strconv.Quote(got.Skill.Description)
	}
	return &server.Skill{Path: path, Frontmatter: front, Generate: func(ctx context.Context, file string) ([]byte, error) {
		s, err := m.catalog.session(ctx)
		if err != nil {
			return nil, m.callError(ctx, err)
		}
		data, err := m.readSkillFile(ctx, s, skillScheme+path+"/"+file)
		if rpc := (*transport.Error)(nil); errors.As(err, &rpc) {
			return nil, errors.Join(server.ErrResourceNotFound, fmt.Errorf("upstream %s: %s", m.up.Name, rpc.Message))
		}
		if err != nil {
			return nil, m.callError(ctx, err)
		}
		if file == "SKILL.md" {
			_, data = splitFrontmatter(data) // the server writes the frontmatter itself
		}
		return data, nil
	}}, nil
}

// skillBudget is what is left of the files and bytes skills may copy.
type skillBudget struct{ files, bytes int }

// errSkillsTooBig is the copy of skills over maxSkillFiles or
// maxSkillBytes.
var errSkillsTooBig = fmt.Errorf("skills over %d files or %d bytes", maxSkillFiles, maxSkillBytes)

// copySkill copies the files the manifest resources lists of the skill at
// path, out of budget: over it, it fails with errSkillsTooBig.
func (m *mount) copySkill(ctx context.Context, s *upstream.Session, path string, resources json.RawMessage, budget *skillBudget) (*server.Skill, error) {
	var listed []struct {
		URI string `json:"uri"`
	}
	if err := json.Unmarshal(resources, &listed); err != nil {
		return nil, badResult(err)
	}
	fsys := fstest.MapFS{}
	for _, r := range listed {
		rel, ok := strings.CutPrefix(r.URI, skillScheme+path+"/")
		if !ok {
			return nil, badResult(fmt.Errorf("file %s outside the skill", r.URI))
		}
		data, err := m.readSkillFile(ctx, s, r.URI)
		if err != nil {
			return nil, m.callError(ctx, err)
		}
		budget.files, budget.bytes = budget.files-1, budget.bytes-len(data)
		if budget.files < 0 || budget.bytes < 0 {
			return nil, errSkillsTooBig
		}
		fsys[rel] = &fstest.MapFile{Data: data, Mode: 0o444}
	}
	return &server.Skill{Path: path, FS: fsys}, nil
}

// splitFrontmatter returns the YAML between a SKILL.md's opening "---"
// line and the next, and the body after it; "" and md when there is none.
func splitFrontmatter(md []byte) (front string, body []byte) {
	rest, ok := bytes.CutPrefix(md, []byte("---\n"))
	if !ok {
		return "", md
	}
	yaml, after, ok := bytes.Cut(rest, []byte("\n---\n"))
	if !ok {
		return "", md
	}
	return string(yaml), after
}
