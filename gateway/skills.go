package gateway

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/vigil-mcp/vigil/gateway/internal/upstream"
	"github.com/vigil-mcp/vigil/server"
)

// Skills (the io.modelcontextprotocol/skills extension) across the hop.
// The gateway declares the extension upstream; the listed skills of an
// upstream that declares it are copied when it is listed: each file read
// (resources/read of its skill:// URI) and the skill registered on the
// server from those files ([server.Server.AddSkill]), which serves
// skills/list, skills/get, the files and their directory reads itself, so
// their digests and sizes are the upstream's own. The files' skill:// URIs
// are then not registered as plain resources. A skill the upstream
// generates when read ("dynamic") or does not list is not served.

// Bounds on the skills copied from one upstream.
const (
	maxSkillFiles = 1_000
	maxSkillBytes = 16 << 20
)

// skillScheme starts the URI of a skill's file.
const skillScheme = "skill://"

// listSkills copies the listed skills of an upstream that declares the
// skills extension into cat, and drops their files from cat's resources.
// A skill that cannot be copied is logged and left out.
func (m *mount) listSkills(ctx context.Context, s *upstream.Session, cat *catalog) error {
	var caps struct {
		Extensions map[string]json.RawMessage `json:"extensions"`
	}
	if json.Unmarshal(s.Initialized().Capabilities, &caps) != nil || caps.Extensions[server.ExtensionSkills] == nil {
		return nil
	}
	items, err := s.List(ctx, "skills/list", "skills", maxListed)
	if err != nil {
		return fmt.Errorf("gateway: %w", err)
	}
	budget := &skillBudget{files: maxSkillFiles, bytes: maxSkillBytes} // for all of them
	for _, it := range items {
		var entry struct {
			URI       string          `json:"uri"`
			Resources json.RawMessage `json:"resources"`
		}
		if err := json.Unmarshal(it, &entry); err != nil {
			return fmt.Errorf("gateway: upstream %s: skills/list: %w", m.up.Name, err)
		}
		path, ok := strings.CutSuffix(strings.TrimPrefix(entry.URI, skillScheme), "/SKILL.md")
		if !ok || !strings.HasPrefix(entry.URI, skillScheme) || !bytes.HasPrefix(bytes.TrimSpace(entry.Resources), []byte("[")) {
			m.log.Warn("gateway: an upstream's skill is not served (generated when read, or not at skill://PATH/SKILL.md)", "upstream", m.up.Name, "skill", entry.URI)
			continue
		}
		sk, err := m.copySkill(ctx, s, path, entry.Resources, budget) // skills_found.go
		switch {
		case errors.Is(err, errSkillsTooBig):
			return fmt.Errorf("gateway: upstream %s: %w", m.up.Name, err)
		case err != nil:
			m.log.Warn("gateway: an upstream's skill is not served", "upstream", m.up.Name, "skill", path, "error", err)
			continue
		}
		cat.skills = append(cat.skills, *sk)
	}
	if len(cat.skills) > 0 {
		kept := cat.resources[:0]
		for _, r := range cat.resources {
			if !strings.HasPrefix(r.URI, skillScheme) {
				kept = append(kept, r)
			}
		}
		cat.resources = kept
	}
	return nil
}

// readSkillFile reads one file of a skill from the upstream.
func (m *mount) readSkillFile(ctx context.Context, s *upstream.Session, uri string) ([]byte, error) {
	params, _ := json.Marshal(map[string]string{"uri": uri}) // a string map encodes
	raw, err := s.Call(ctx, "resources/read", params, nil)
	if err != nil {
		return nil, err
	}
	var res struct {
		Contents []struct {
			URI  string  `json:"uri"`
			Text *string `json:"text"`
			Blob *string `json:"blob"`
		} `json:"contents"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, err
	}
	for _, c := range res.Contents {
		switch {
		case c.URI != uri:
		case c.Text != nil:
			return []byte(*c.Text), nil
		case c.Blob != nil:
			return base64.StdEncoding.DecodeString(*c.Blob)
		}
	}
	return nil, fmt.Errorf("resources/read %s: no contents of it", uri)
}
