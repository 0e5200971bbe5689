package server

import (
	"context"
	"encoding/json"
	"maps"
	"strings"

	"github.com/vigil-mcp/vigil/transport/protocol"
)

// The methods of the skills extension (skills.go registers the skills).
// Their results carry resultType, ttlMs and cacheScope in every protocol
// era: the extension is written against 2026-07-28, whose result shapes
// it requires, and a 2025 client ignores members it does not know.

// withSkillsExtension declares the skills extension, with
// resources/directory/read (a skill is registered).
func withSkillsExtension(caps *serverCapabilities) {
	ext := maps.Clone(caps.Extensions)
	if ext == nil {
		ext = map[string]any{}
	}
	ext[ExtensionSkills] = map[string]any{"directoryRead": true}
	caps.Extensions = ext
}

// cacheHints are the members every result of the extension's methods
// carries.
type cacheHints struct {
	ResultType string `json:"resultType"`
	TTLMs      int64  `json:"ttlMs"`
	CacheScope string `json:"cacheScope"`
}

func (s *Server) cacheHints() cacheHints {
	return cacheHints{"complete", s.cfg.cacheTTL.Milliseconds(), s.cfg.cacheScope}
}

// listSkills answers skills/list: the listed skills' entries, a page at a
// time, each entry whole.
func (s *Server) listSkills(_ context.Context, req *Request) (any, error) {
	p, err := decodeListParams(req)
	if err != nil {
		return nil, err
	}
	set := s.resources.skillSnapshot()
	page, next, err := paginate(set.listed, func(i int) string { return set.listed[i].uri }, p.Cursor, s.cfg.pageSize)
	if err != nil {
		return nil, err
	}
	entries := make([]json.RawMessage, len(page))
	for i, sk := range page {
		entries[i] = sk.entry
	}
	return struct {
		Skills     []json.RawMessage `json:"skills"`
		NextCursor string            `json:"nextCursor,omitempty"`
		cacheHints
	}{entries, next, s.cacheHints()}, nil
}

// getSkill answers skills/get: the entry of any skill served, listed or
// not, or found (SetSkillFinder); -32602 for a URI that names none.
func (s *Server) getSkill(ctx context.Context, req *Request) (any, error) {
	uri, err := uriParam(req)
	if err != nil {
		return nil, err
	}
	sk := s.resources.skillSnapshot().byURI[uri]
	if sk == nil {
		found, err := s.findSkill(ctx, uri) // skill_finder.go
		if err != nil {
			return nil, err
		}
		if found {
			sk = s.resources.skillSnapshot().byURI[uri]
		}
	}
	if sk == nil {
		return nil, Errorf(protocol.CodeInvalidParams, "No skill is served at %s", uri)
	}
	return struct {
		Skill json.RawMessage `json:"skill"`
		cacheHints
	}{sk.entry, s.cacheHints()}, nil
}

// readDirectory answers resources/directory/read: the direct children of
// a directory of the skills, a page at a time; -32602 for a URI that is
// not a directory.
func (s *Server) readDirectory(_ context.Context, req *Request) (any, error) {
	uri, err := uriParam(req)
	if err != nil {
		return nil, err
	}
	p, err := decodeListParams(req)
	if err != nil {
		return nil, err
	}
	kids, ok := s.resources.skillSnapshot().dirs[strings.TrimSuffix(uri, "/")]
	if !ok {
		return nil, Errorf(protocol.CodeInvalidParams, "%s is not a directory resource", uri)
	}
	page, next, err := paginate(kids, func(i int) string { return kids[i].URI }, p.Cursor, s.cfg.pageSize)
	if err != nil {
		return nil, err
	}
	return struct {
		ResultType string     `json:"resultType"`
		Resources  []Resource `json:"resources"`
		NextCursor string     `json:"nextCursor,omitempty"`
	}{"complete", page, next}, nil
}
