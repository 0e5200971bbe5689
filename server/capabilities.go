package server

import (
	"encoding/json"
	"sync/atomic"
)

// capabilities is what the server declares: each feature that has
// something registered, with list_changed where the server sends it.
func (s *Server) capabilities() serverCapabilities { return s.capabilitiesKey().capabilities() }

// capabilitiesKey is what capabilities depends on: what is registered.
type capabilitiesKey struct {
	tools, resources, prompts, completions, tasks, views, skills bool
}

func (s *Server) capabilitiesKey() capabilitiesKey {
	s.resources.mu.RLock()
	views := s.resources.views
	s.resources.mu.RUnlock()
	return capabilitiesKey{
		tools:       s.servesTools(),
		resources:   s.servesResources(),
		prompts:     s.servesPrompts(),
		completions: s.hasCompleters(),
		tasks:       s.tasksEnabled(),
		views:       views,
		skills:      s.servesSkills(),
	}
}

// servesTools reports whether the server declares tools: some are
// registered, or features are expected (ExpectFeatures).
func (s *Server) servesTools() bool { return s.expectsFeatures.Load() || s.tools.hasTools() }

// servesPrompts reports whether the server declares prompts.
func (s *Server) servesPrompts() bool { return s.expectsFeatures.Load() || s.prompts.hasAny() }

// servesResources reports whether the server declares resources: some
// are registered, a fallback reads the others (SetResourceFallback), or
// features are expected.
func (s *Server) servesResources() bool {
	return s.expectsFeatures.Load() || s.resourceFallback.Load() != nil || s.resources.hasAny()
}

// capabilities is what a server with k registered declares. Logging is
// always declared: any handler may log through Logger.
func (k capabilitiesKey) capabilities() serverCapabilities {
	caps := serverCapabilities{Logging: &struct{}{}}
	if k.tools {
		caps.Tools = &listChangedCapability{ListChanged: true}
	}
	if k.resources {
		caps.Resources = &resourcesCapability{Subscribe: true, ListChanged: true}
	}
	if k.prompts {
		caps.Prompts = &listChangedCapability{ListChanged: true}
	}
	if k.completions {
		caps.Completions = &struct{}{}
	}
	if k.tasks {
		caps.Tasks = tasksCapability()
	}
	if k.views {
		withUIExtension(&caps) // apps.go
	}
	if k.skills {
		withSkillsExtension(&caps) // skills_methods.go
	}
	return caps
}

// encodedCapabilities is capabilities encoded, with the key it was
// encoded for.
type encodedCapabilities struct {
	key  capabilitiesKey
	json json.RawMessage
}

// capabilitiesCache holds the capabilities of the last initialize,
// encoded: every session's initialize answers with the same ones until
// something registered changes them, and building and encoding them
// (maps, for tasks and extensions) left garbage in each session's
// opening.
type capabilitiesCache struct {
	last atomic.Pointer[encodedCapabilities]
}

// encodedCapabilities returns capabilities, JSON-encoded, from the cache
// when what they depend on has not changed since they were encoded.
func (s *Server) encodedCapabilities() json.RawMessage {
	key := s.capabilitiesKey()
	if c := s.capsCache.last.Load(); c != nil && c.key == key {
		return c.json
	}
	data, err := json.Marshal(key.capabilities())
	if err != nil { // maps of strings and structs: never
		s.cfg.logger.Error("cannot encode the server's capabilities", "error", err)
		return json.RawMessage(`{}`)
	}
	s.capsCache.last.Store(&encodedCapabilities{key: key, json: data})
	return data
}
