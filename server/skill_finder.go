package server

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Skills found when a client names them. A server that fronts another (a
// gateway) copies the skills the other lists, but not those it serves
// unlisted: it learns of one only when a client names it, with skills/get
// or by reading its SKILL.md. SetSkillFinder lets it ask then.

// skillFind returns the skill at path (that of skill://PATH/SKILL.md),
// which no registered skill serves, or nil when there is none.
type skillFind = func(ctx context.Context, path string) (*Skill, error)

// maxFoundSkills bounds the skills a finder found that a server
// keeps: a client names them, so their number is the client's to choose.
const maxFoundSkills = 64

// skillFinder is a server's finder (SetSkillFinder) and the skills it
// found, oldest first. add registers a found skill: it is the server's
// AddSkill, set by SetSkillFinder, so that a program that sets no finder
// and adds no skill does not link the parsing of a SKILL.md (YAML).
type skillFinder struct {
	find  atomic.Pointer[skillFind]
	add   atomic.Pointer[func(Skill) error]
	mu    sync.Mutex
	found []string
}

// SetSkillFinder makes skills/get, and resources/read of a SKILL.md, ask
// find for a skill path that no registered skill serves (that of
// skill://PATH/SKILL.md); find returns nil when there is none. A skill find
// returns is registered at that path as Unlisted and answers the request,
// and the reads of its files that follow; at most 64 found skills are
// kept, the one found first removed first. An error of find fails the
// request; (nil, nil) answers as for no skill. nil removes the finder. It
// is safe for concurrent use. A server with a finder declares the skills
// extension, whether or not it has skills yet.
func (s *Server) SetSkillFinder(find func(ctx context.Context, path string) (*Skill, error)) {
	if find == nil {
		s.finder.find.Store(nil)
		return
	}
	add := s.AddSkill
	s.finder.add.Store(&add)
	s.finder.find.Store(&find)
}

// servesSkills reports whether the server serves skills: it has some, or
// a finder that may find some, and so declares the extension.
func (s *Server) servesSkills() bool {
	return s.resources.hasSkills() || s.finder.find.Load() != nil
}

// findSkill asks the finder for the skill whose SKILL.md uri is,
// and registers it; found reports whether it did.
func (s *Server) findSkill(ctx context.Context, uri string) (found bool, err error) {
	find := s.finder.find.Load()
	if find == nil {
		return false, nil
	}
	p, ok := strings.CutPrefix(uri, skillScheme)
	if ok {
		p, ok = strings.CutSuffix(p, "/"+skillMD)
	}
	if !ok || checkSkillPath(p) != nil {
		return false, nil
	}
	sk, err := (*find)(ctx, p)
	if err != nil || sk == nil {
		return false, err
	}
	sk.Path, sk.Unlisted = p, true
	if err := (*s.finder.add.Load())(*sk); err != nil {
		return false, err
	}
	s.finder.mu.Lock()
	f := &s.finder
	f.found = append(slices.DeleteFunc(f.found, func(q string) bool { return q == p }), p)
	var evicted []string
	if len(f.found) > maxFoundSkills {
		evicted = slices.Clone(f.found[:len(f.found)-maxFoundSkills])
		f.found = slices.Delete(f.found, 0, len(evicted))
	}
	s.finder.mu.Unlock()
	s.RemoveSkills(evicted...)
	return true, nil
}
