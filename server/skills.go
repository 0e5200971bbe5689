package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Skills (io.modelcontextprotocol/skills, SEP-2640): the package doc
// (Skills) describes what is served; skills_methods.go answers the
// methods.

// ExtensionSkills is the identifier of the skills extension, in
// capabilities.extensions.
const ExtensionSkills = "io.modelcontextprotocol/skills"

// The extension's per-skill limits, and the Agent Skills specification's
// bounds on frontmatter fields. A skill's entries are its files and its
// directories that hold no file (empty, or only directories).
// maxSkillsBytes bounds the files of all the skills a server serves, which
// it keeps in memory.
const (
	maxSkillFiles         = 512
	maxSkillBytes         = 16 << 20
	maxSkillsBytes        = 64 << 20
	maxSkillName          = 64
	maxSkillDescription   = 1024
	maxSkillCompatibility = 500
	maxSkillPath          = 512 // bytes of a skill path: a skill's URIs stay well under maxURI
	skillScheme           = "skill://"
	skillMD               = "SKILL.md"
	mimeDirectory         = "inode/directory"
)

// Skill is an Agent Skill to serve: a directory holding SKILL.md and its
// supporting files, each served as the resource skill://<Path>/<file>.
// Exactly one of FS and Generate is set.
type Skill struct {
	// Path locates the skill: one or more "/"-separated segments, the last
	// equal to the frontmatter name ("acme/billing/refunds").
	Path string
	// FS is the skill's directory: SKILL.md at its root. Every file under
	// it is read, digested and kept at registration; later changes to FS
	// are not seen. Files and directories whose names begin with a dot
	// (.git, .env, .DS_Store) are not served.
	FS fs.FS
	// Frontmatter is the YAML frontmatter of a dynamic skill (without the
	// "---" lines); the SKILL.md served is it, fenced, then Generate's body.
	Frontmatter string
	// Generate makes a dynamic skill: it returns SKILL.md's body for file
	// "SKILL.md" and the content of any other file, or ErrResourceNotFound.
	// Its entry lists its resources as "dynamic"; a directory read of its
	// root lists SKILL.md alone.
	Generate func(ctx context.Context, file string) ([]byte, error)
	// Unlisted leaves the skill out of skills/list and resources/list;
	// skills/get, resources/read and resources/directory/read still serve it.
	Unlisted bool
}

// skill is a registered skill; immutable.
type skill struct {
	path    string
	uri     string          // of its SKILL.md
	entry   json.RawMessage // its Skill entry, encoded once
	listed  bool
	files   []*skillFile // sorted by URI; nil for a dynamic skill
	dirs    []string     // its directories' paths relative to its root, "" the root
	gen     func(ctx context.Context, file string) ([]byte, error)
	front   []byte // a dynamic skill's fenced frontmatter
	skillMD Resource
	size    int // the bytes of its files
}

// skillFile is one file of a static skill, read once and encoded once.
type skillFile struct {
	res  Resource
	rel  string // its path relative to the skill's root
	data []byte // as read; nil once encoded (contents holds it)
	// contents is what a read returns (its Text or Blob the bytes read),
	// and session and stateless the result of a read as each protocol era
	// writes it, encoded at registration: every read writes them.
	contents  ResourceContents
	session   json.RawMessage
	stateless json.RawMessage
}

// skillSet is every registered skill, with the indexes the methods read;
// replaced, never modified, on change.
type skillSet struct {
	byPath    map[string]*skill
	byURI     map[string]*skill     // SKILL.md URI → skill
	files     map[string]*skillFile // file URI → file of a static skill
	dynamic   []*skill              // dynamic skills, longest path first
	listed    []*skill              // sorted by URI
	dirs      map[string][]Resource // directory URI → direct children, sorted by URI
	resources []Resource            // the listed skills' SKILL.md, sorted by URI
	handlers  map[string]*registeredResource
}

// AddSkill registers a skill, replacing any skill of the same Path, and
// tells initialized clients that the resource list changed. It fails, and
// registers nothing, when the skill breaks a rule of the Agent Skills
// specification or of SEP-2640 (see the package doc), holds a symbolic or
// hard link, or would take the files of all the server's skills over 64
// MiB. A static skill's files are read here, and the result of each one's
// resources/read encoded for each protocol era: reads write those bytes,
// bounded by these limits rather than by [WithMaxResultBytes]. It is safe
// for concurrent use.
func (s *Server) AddSkill(sk Skill) error {
	built, err := s.buildSkill(sk, s.resources.skillRoom(sk.Path))
	if err != nil {
		return err
	}
	_, err = s.replaceSkills(nil, built)
	return err
}

// AddSkills registers as a listed skill every directory of fsys that holds
// a SKILL.md, at its path in fsys (nested skills too), as [Server.AddSkill]
// would, and returns their paths, sorted. It registers nothing when one
// fails; a SKILL.md at the root of fsys fails, having no path.
func (s *Server) AddSkills(fsys fs.FS) ([]string, error) {
	var dirs []string
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if hidden(p) {
			return skipHidden(d)
		}
		if !d.IsDir() && path.Base(p) == skillMD {
			dirs = append(dirs, path.Dir(p))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("mcp: skills: %w", err)
	}
	slices.Sort(dirs) // WalkDir's order is not the paths' ("a/b" before "a-c")
	built := make([]*skill, 0, len(dirs))
	room := s.resources.skillRoom(dirs...)
	for _, dir := range dirs {
		if dir == "." {
			return nil, errors.New("mcp: skills: SKILL.md at the root has no skill path: serve its parent directory")
		}
		sub, err := fs.Sub(fsys, dir)
		if err != nil {
			return nil, fmt.Errorf("mcp: skill %q: %w", dir, err)
		}
		sk, err := s.buildSkill(Skill{Path: dir, FS: sub}, room)
		if err != nil {
			return nil, err
		}
		room -= sk.size
		built = append(built, sk)
	}
	if _, err := s.replaceSkills(nil, built...); err != nil {
		return nil, err
	}
	return dirs, nil
}

// RemoveSkills unregisters the skills at the given paths and tells
// initialized clients that the resource list changed. It reports how many
// it removed.
func (s *Server) RemoveSkills(paths ...string) int {
	n, _ := s.replaceSkills(paths) // removing never exceeds a bound
	return n
}

// skillRoom returns how many bytes of files the skills may add, replacing
// those at paths, within maxSkillsBytes.
func (rr *resourceRegistry) skillRoom(paths ...string) int {
	rr.mu.RLock()
	defer rr.mu.RUnlock()
	room := maxSkillsBytes
	if rr.skills != nil {
		for p, sk := range rr.skills.byPath {
			if !slices.Contains(paths, p) {
				room -= sk.size
			}
		}
	}
	return room
}

// replaceSkills removes the skills at paths, adds add (replacing those of
// the same path), and rebuilds the indexes; it reports how many of paths
// it removed, and announces the change when a listed skill came or went. It changes
// nothing, and fails, when the skills' files would then exceed
// maxSkillsBytes.
func (s *Server) replaceSkills(paths []string, add ...*skill) (int, error) {
	rr := &s.resources
	rr.mu.Lock()
	byPath := map[string]*skill{}
	if rr.skills != nil {
		byPath = make(map[string]*skill, len(rr.skills.byPath)+len(add))
		for p, sk := range rr.skills.byPath {
			byPath[p] = sk
		}
	}
	n, listed := 0, false // listed: a listed skill comes or goes, which changes resources/list
	for _, p := range paths {
		if old, ok := byPath[p]; ok {
			delete(byPath, p)
			n++
			listed = listed || old.listed
		}
	}
	for _, sk := range add {
		if old, ok := byPath[sk.path]; ok {
			listed = listed || old.listed
		}
		byPath[sk.path] = sk
		listed = listed || sk.listed
	}
	if len(add) > 0 {
		size := 0
		for _, sk := range byPath {
			size += sk.size
		}
		if size > maxSkillsBytes {
			rr.mu.Unlock()
			return 0, fmt.Errorf("mcp: skills: their files are over %d bytes, the limit of all the skills a server serves", maxSkillsBytes)
		}
	}
	changed := n > 0 || len(add) > 0
	if changed {
		rr.skills = indexSkills(byPath)
		rr.relistLocked()
	}
	rr.mu.Unlock()
	if changed && listed {
		s.listChanged("resources")
	}
	return n, nil
}

// hasSkills reports whether any skill is registered: the server then
// declares the extension (and resources).
func (rr *resourceRegistry) hasSkills() bool {
	rr.mu.RLock()
	defer rr.mu.RUnlock()
	return rr.skills != nil && len(rr.skills.byPath) > 0
}

// skillSnapshot returns the current skills; never nil.
func (rr *resourceRegistry) skillSnapshot() *skillSet {
	rr.mu.RLock()
	defer rr.mu.RUnlock()
	if rr.skills == nil {
		return &skillSet{}
	}
	return rr.skills
}

// indexSkills builds the indexes of the skills in byPath.
func indexSkills(byPath map[string]*skill) *skillSet {
	set := &skillSet{
		byPath: byPath, byURI: map[string]*skill{}, files: map[string]*skillFile{},
		dirs: map[string][]Resource{}, handlers: map[string]*registeredResource{},
	}
	children := map[string]map[string]Resource{}
	addChild := func(dir string, r Resource) {
		if children[dir] == nil {
			children[dir] = map[string]Resource{}
		}
		children[dir][r.URI] = r
	}
	for _, sk := range byPath {
		set.byURI[sk.uri] = sk
		if sk.listed {
			set.listed = append(set.listed, sk)
		}
		root := skillScheme + sk.path
		for _, d := range sk.dirs {
			u := joinURI(root, d)
			if children[u] == nil {
				children[u] = map[string]Resource{}
			}
			if d != "" {
				addChild(joinURI(root, path.Dir(d)), Resource{URI: u, Name: path.Base(d), MIMEType: mimeDirectory})
			}
		}
		if sk.gen != nil {
			set.dynamic = append(set.dynamic, sk)
		}
		if sk.listed {
			set.resources = append(set.resources, sk.skillMD)
		}
		for _, f := range sk.files {
			set.files[f.res.URI] = f
			set.handlers[f.res.URI] = &registeredResource{res: f.res, handler: f.read}
			addChild(joinURI(root, path.Dir(f.rel)), f.res)
		}
		if sk.listed { // a listed skill's prefix directories lead to it
			segs := strings.Split(sk.path, "/")
			for i := len(segs) - 1; i > 0; i-- {
				parent := skillScheme + strings.Join(segs[:i], "/")
				child := parent + "/" + segs[i]
				addChild(parent, Resource{URI: child, Name: segs[i], MIMEType: mimeDirectory})
			}
		}
	}
	// A nested skill's SKILL.md is also a file of the enclosing skill: it
	// is described as its own skill's SKILL.md, whichever came first.
	for _, sk := range byPath {
		addChild(skillScheme+sk.path, sk.skillMD)
		if f := set.files[sk.uri]; f != nil {
			set.handlers[sk.uri] = &registeredResource{res: sk.skillMD, handler: f.read}
		}
	}
	for dir, kids := range children {
		list := make([]Resource, 0, len(kids))
		for _, r := range kids {
			list = append(list, r)
		}
		slices.SortFunc(list, func(a, b Resource) int { return strings.Compare(a.URI, b.URI) })
		set.dirs[dir] = list
	}
	slices.SortFunc(set.listed, func(a, b *skill) int { return strings.Compare(a.uri, b.uri) })
	slices.SortFunc(set.dynamic, func(a, b *skill) int { return len(b.path) - len(a.path) })
	slices.SortFunc(set.resources, func(a, b Resource) int { return strings.Compare(a.URI, b.URI) })
	return set
}

// resolve returns what serves uri among the skills' files, or nil.
func (set *skillSet) resolve(uri string) *registeredResource {
	if r := set.handlers[uri]; r != nil {
		return r
	}
	for _, sk := range set.dynamic {
		if file, ok := strings.CutPrefix(uri, skillScheme+sk.path+"/"); ok && file != "" {
			return &registeredResource{res: Resource{URI: uri, Name: path.Base(file)}, handler: sk.readDynamic}
		}
	}
	return nil
}

// joinURI appends the relative path rel ("" or "." for none) to a
// directory URI, escaping each segment.
func joinURI(dir, rel string) string {
	if rel == "" || rel == "." {
		return dir
	}
	segs := strings.Split(rel, "/")
	for i, s := range segs {
		segs[i] = escapeSegment(s)
	}
	return dir + "/" + strings.Join(segs, "/")
}

// escapeSegment percent-encodes what a URI path segment may not hold.
func escapeSegment(s string) string {
	var b strings.Builder
	for i := range len(s) {
		c := s[i]
		if isUnreserved(c) || strings.IndexByte("!$&'()*+,;=:@", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

// skillRead is a read of a static skill file: its result and what the
// result holds, allocated at once.
type skillRead struct {
	res      ReadResourceResult
	list     [1]*ResourceContents
	contents ResourceContents
}

// read serves a static skill file from what was read and encoded at
// registration: the result shares the file's bytes (a copy of its
// contents, which a middleware may change without changing the file's),
// and is written as encoded then, unless changed.
func (f *skillFile) read(context.Context, *ReadResourceRequest) (*ReadResourceResult, error) {
	r := &skillRead{contents: f.contents}
	r.list[0] = &r.contents
	r.res = ReadResourceResult{Contents: r.list[:], encoded: f}
	return &r.res, nil
}

// encodedFor returns the encoding of r, a read of f, in era: nil when r
// is no longer what f's read returned (a middleware changed it), which
// is then encoded as any result is.
func (f *skillFile) encodedFor(r *ReadResourceResult, e era) json.RawMessage {
	if r.Meta != nil || len(r.Contents) != 1 || !f.contents.same(r.Contents[0]) {
		return nil
	}
	if _, stateless := e.(*statelessEra); stateless {
		return f.stateless
	}
	return f.session
}

// same reports whether c holds what rc holds, the same bytes (a
// string's comparison stops at once when both share their bytes).
func (rc *ResourceContents) same(c *ResourceContents) bool {
	return c.URI == rc.URI && c.MIMEType == rc.MIMEType && c.Text == rc.Text && c.Meta == nil && rc.Meta == nil &&
		len(c.Blob) == len(rc.Blob) && (c.Blob == nil) == (rc.Blob == nil) && (len(c.Blob) == 0 || &c.Blob[0] == &rc.Blob[0])
}

// encode prepares f's reads: its contents, and their result as each era
// writes it. The bytes read are then held by the contents alone.
func (s *Server) encode(f *skillFile) error {
	f.contents = ResourceContents{URI: f.res.URI, MIMEType: f.res.MIMEType}
	if textual(f.res.MIMEType) && utf8.Valid(f.data) { // as fileContents has it
		f.contents.Text = string(f.data)
	} else {
		f.contents.Blob = f.data // the file's own bytes, not a copy
	}
	f.data = nil
	var err error
	if f.session, err = json.Marshal(&ReadResourceResult{Contents: []*ResourceContents{&f.contents}}); err != nil {
		return err
	}
	f.stateless, err = (&statelessEra{srv: s}).decorate("resources/read", f.session)
	return err
}

// readDynamic serves a file of a dynamic skill from its Generate.
func (sk *skill) readDynamic(ctx context.Context, req *ReadResourceRequest) (*ReadResourceResult, error) {
	file, _ := strings.CutPrefix(req.URI, skillScheme+sk.path+"/")
	name, err := unescapePath(file)
	if err != nil {
		return nil, ErrResourceNotFound
	}
	data, err := sk.gen(ctx, name)
	if err != nil {
		return nil, err
	}
	if len(data) > maxSkillBytes {
		return nil, fmt.Errorf("mcp: skill %q: %s: generated over %d bytes", sk.path, name, maxSkillBytes)
	}
	if name == skillMD {
		data = append(slices.Clip(sk.front), data...)
	}
	return &ReadResourceResult{Contents: []*ResourceContents{fileContents(req.URI, mimeTypeOf(name), data)}}, nil
}

// unescapePath undoes escapeSegment on a relative path.
func unescapePath(p string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] != '%' {
			b.WriteByte(p[i])
			continue
		}
		if i+2 >= len(p) {
			return "", errors.New("bad escape")
		}
		v, err := hex.DecodeString(p[i+1 : i+3])
		if err != nil {
			return "", err
		}
		b.WriteByte(v[0])
		i += 2
	}
	return b.String(), nil
}

// fileContents returns data as text when it is UTF-8 of a textual MIME
// type, else as a blob: either way a client gets the same bytes back.
func fileContents(uri, mimeType string, data []byte) *ResourceContents {
	if textual(mimeType) && utf8.Valid(data) {
		return &ResourceContents{URI: uri, MIMEType: mimeType, Text: string(data)}
	}
	return &ResourceContents{URI: uri, MIMEType: mimeType, Blob: bytes.Clone(data)}
}

// buildSkill validates sk and reads, digests, indexes and encodes its
// files, which may hold room bytes at most (what the other skills leave of
// maxSkillsBytes).
func (s *Server) buildSkill(sk Skill, room int) (*skill, error) {
	name := path.Base(sk.Path)
	if err := checkSkillPath(sk.Path); err != nil {
		return nil, fmt.Errorf("mcp: skill %q: %w", sk.Path, err)
	}
	out := &skill{path: sk.Path, uri: skillScheme + sk.Path + "/" + skillMD, listed: !sk.Unlisted, gen: sk.Generate}
	var front map[string]any
	var raw []byte
	switch {
	case (sk.FS == nil) == (sk.Generate == nil):
		return nil, fmt.Errorf("mcp: skill %q: exactly one of FS and Generate must be set", sk.Path)
	case sk.Generate != nil:
		fm := sk.Frontmatter
		if !strings.HasSuffix(fm, "\n") {
			fm += "\n"
		}
		out.front = []byte("---\n" + fm + "---\n")
		out.dirs = []string{""}
		raw = out.front
	default:
		if sk.Frontmatter != "" {
			return nil, fmt.Errorf("mcp: skill %q: Frontmatter is for dynamic skills: a static skill's is in its SKILL.md", sk.Path)
		}
		files, dirs, err := readSkillFiles(sk.FS, skillScheme+sk.Path, room)
		if err != nil {
			return nil, fmt.Errorf("mcp: skill %q: %w", sk.Path, err)
		}
		out.files, out.dirs = files, dirs
		for _, f := range files {
			out.size += len(f.data)
		}
		i := slices.IndexFunc(files, func(f *skillFile) bool { return f.res.URI == out.uri })
		if i < 0 {
			return nil, fmt.Errorf("mcp: skill %q: no SKILL.md at its root", sk.Path)
		}
		raw = files[i].data
	}
	front, err := parseFrontmatter(raw)
	if err != nil {
		return nil, fmt.Errorf("mcp: skill %q: SKILL.md: %w", sk.Path, err)
	}
	if err := checkFrontmatter(front, name); err != nil {
		return nil, fmt.Errorf("mcp: skill %q: SKILL.md: %w", sk.Path, err)
	}
	desc, _ := front["description"].(string)
	out.skillMD = Resource{URI: out.uri, Name: name, Description: desc, MIMEType: "text/markdown"}
	for _, f := range out.files {
		if f.res.URI == out.uri {
			f.res.Name, f.res.Description = name, desc
			out.skillMD = f.res
		}
	}
	frontJSON, err := json.Marshal(front)
	if err != nil {
		return nil, fmt.Errorf("mcp: skill %q: SKILL.md: the frontmatter has no JSON form: %w", sk.Path, err)
	}
	type skillResource struct {
		URI    string `json:"uri"`
		Digest string `json:"digest"`
		Size   int64  `json:"size"`
	}
	var resources any = "dynamic"
	if sk.Generate == nil {
		list := make([]skillResource, len(out.files))
		for i, f := range out.files {
			sum := sha256.Sum256(f.data)
			list[i] = skillResource{URI: f.res.URI, Digest: "sha256:" + hex.EncodeToString(sum[:]), Size: int64(len(f.data))}
		}
		resources = list
	}
	out.entry, err = json.Marshal(struct {
		URI         string          `json:"uri"`
		Frontmatter json.RawMessage `json:"frontmatter"`
		Resources   any             `json:"resources"`
	}{out.uri, frontJSON, resources})
	if err != nil {
		return nil, fmt.Errorf("mcp: skill %q: %w", sk.Path, err)
	}
	for _, f := range out.files {
		if err := s.encode(f); err != nil {
			return nil, fmt.Errorf("mcp: skill %q: %s: %w", sk.Path, f.rel, err)
		}
	}
	return out, nil
}

// checkSkillPath checks a skill path: URI-safe segments, none empty, "."
// or "..", the last a valid skill name (checked against the frontmatter
// later).
func checkSkillPath(p string) error {
	if p == "" || len(p) > maxSkillPath {
		return fmt.Errorf("the path must have 1 to %d bytes", maxSkillPath)
	}
	for seg := range strings.SplitSeq(p, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return errors.New("the path has an empty, \".\" or \"..\" segment")
		}
		for i := range len(seg) {
			if !isUnreserved(seg[i]) {
				return fmt.Errorf("segment %q: only letters, digits and -._~ may appear in a skill path", seg)
			}
		}
	}
	return checkSkillName(path.Base(p))
}

// checkSkillName applies the Agent Skills naming rule: 1 to 64 lowercase
// letters, digits and hyphens, no hyphen first, last or twice in a row.
func checkSkillName(name string) error {
	ok := name != "" && len(name) <= maxSkillName && name[0] != '-' && name[len(name)-1] != '-' && !strings.Contains(name, "--")
	for i := range len(name) {
		c := name[i]
		ok = ok && ('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-')
	}
	if !ok {
		return fmt.Errorf("skill name %q: 1 to %d lowercase letters, digits and hyphens, no leading, trailing or double hyphen", name, maxSkillName)
	}
	return nil
}

// parseFrontmatter returns the YAML frontmatter that opens a SKILL.md:
// between a first line "---" and the next line "---".
func parseFrontmatter(data []byte) (map[string]any, error) {
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	rest, ok := strings.CutPrefix(text, "---\n")
	if !ok {
		return nil, errors.New("it must begin with YAML frontmatter (a line \"---\")")
	}
	var block string
	switch {
	case strings.HasPrefix(rest, "---\n") || rest == "---":
		block = ""
	default:
		end := strings.Index(rest, "\n---\n")
		if end < 0 && strings.HasSuffix(rest, "\n---") {
			end = len(rest) - len("\n---")
		}
		if end < 0 {
			return nil, errors.New("the frontmatter is not closed by a line \"---\"")
		}
		block = rest[:end]
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(block), &doc); err != nil {
		return nil, fmt.Errorf("frontmatter: %w", err)
	}
	if len(doc.Content) == 0 {
		return nil, errors.New("the frontmatter is empty")
	}
	budget := maxFrontmatterNodes
	v, err := yamlValue(doc.Content[0], &budget)
	if err != nil {
		return nil, fmt.Errorf("frontmatter: %w", err)
	}
	front, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("frontmatter: not a mapping")
	}
	return front, nil
}

// maxFrontmatterNodes bounds the values a frontmatter expands to, aliases
// included (a "billion laughs" document expands exponentially).
const maxFrontmatterNodes = 10000

// yamlValue converts a YAML node to the value JSON gives it, as a YAML 1.2
// reader (the hosts') sees it: a timestamp stays the string written, keys
// are strings. It spends one of *budget per node.
func yamlValue(n *yaml.Node, budget *int) (any, error) {
	if *budget--; *budget < 0 {
		return nil, fmt.Errorf("over %d values (aliases included)", maxFrontmatterNodes)
	}
	switch n.Kind {
	case yaml.AliasNode:
		return yamlValue(n.Alias, budget)
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind == yaml.AliasNode {
				k = k.Alias
			}
			if k.Kind != yaml.ScalarNode || k.Tag == "!!merge" {
				return nil, fmt.Errorf("line %d: keys must be plain scalars", k.Line)
			}
			if _, dup := m[k.Value]; dup {
				return nil, fmt.Errorf("line %d: key %q twice", k.Line, k.Value)
			}
			v, err := yamlValue(n.Content[i+1], budget)
			if err != nil {
				return nil, err
			}
			m[k.Value] = v
		}
		return m, nil
	case yaml.SequenceNode:
		l := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := yamlValue(c, budget)
			if err != nil {
				return nil, err
			}
			l = append(l, v)
		}
		return l, nil
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!int", "!!float", "!!bool", "!!null":
			var v any
			if err := n.Decode(&v); err != nil {
				return nil, err
			}
			return v, nil
		}
		return n.Value, nil // strings, and timestamps as written
	}
	return nil, fmt.Errorf("line %d: unsupported YAML node", n.Line)
}

// checkFrontmatter applies the Agent Skills specification's rules to the
// fields it defines; other fields pass through.
func checkFrontmatter(front map[string]any, dirName string) error {
	name, ok := front["name"].(string)
	if !ok {
		return errors.New("frontmatter: name must be a string")
	}
	if err := checkSkillName(name); err != nil {
		return fmt.Errorf("frontmatter: %w", err)
	}
	if name != dirName {
		return fmt.Errorf("frontmatter: name %q must equal the last segment of the skill path, %q", name, dirName)
	}
	desc, ok := front["description"].(string)
	if !ok || strings.TrimSpace(desc) == "" || utf8.RuneCountInString(desc) > maxSkillDescription {
		return fmt.Errorf("frontmatter: description must be a string of 1 to %d characters", maxSkillDescription)
	}
	if v, ok := front["compatibility"]; ok {
		c, isString := v.(string)
		if !isString || c == "" || utf8.RuneCountInString(c) > maxSkillCompatibility {
			return fmt.Errorf("frontmatter: compatibility must be a string of 1 to %d characters", maxSkillCompatibility)
		}
	}
	for _, key := range []string{"license", "allowed-tools"} {
		if v, ok := front[key]; ok {
			if _, isString := v.(string); !isString {
				return fmt.Errorf("frontmatter: %s must be a string", key)
			}
		}
	}
	if v, ok := front["metadata"]; ok {
		m, isMap := v.(map[string]any)
		if !isMap {
			return errors.New("frontmatter: metadata must be a map of strings to strings")
		}
		for k, e := range m {
			if _, isString := e.(string); !isString {
				return fmt.Errorf("frontmatter: metadata %q must be a string", k)
			}
		}
	}
	return nil
}

// readSkillFiles reads every file under fsys (the skill's directory, whose
// URI is root) within the extension's limits and room bytes, and returns
// them sorted by URI with the directories' relative paths ("" the root).
// Symbolic links and hard links (a file with another name, maybe outside
// the directory) are refused.
func readSkillFiles(fsys fs.FS, root string, room int) ([]*skillFile, []string, error) {
	var files []*skillFile
	var dirs []string
	withFiles := map[string]bool{} // directories that hold a file
	total := 0
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if hidden(p) {
			return skipHidden(d)
		}
		if d.IsDir() {
			// Directories are at most the entries: each holds a file, or
			// is an entry itself.
			if len(dirs) == maxSkillFiles {
				return errTooManyEntries
			}
			dirs = append(dirs, strings.TrimPrefix(p, "."))
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file (symbolic links are not followed)", p)
		}
		if info, err := d.Info(); err != nil {
			return err
		} else if hardLinked(info) {
			return fmt.Errorf("%s: a hard link (the file has other names, maybe outside the directory): copy it instead", p)
		}
		if len(files) == maxSkillFiles {
			return errTooManyEntries
		}
		withFiles[strings.TrimPrefix(path.Dir(p), ".")] = true
		data, err := readBounded(fsys, p, min(maxSkillBytes, room)-total, room < maxSkillBytes)
		if err != nil {
			return err
		}
		total += len(data)
		size := int64(len(data))
		uri := joinURI(root, p)
		if len(uri) > maxURI {
			return fmt.Errorf("%s: its URI is over %d bytes, more than a client may send", p, maxURI)
		}
		files = append(files, &skillFile{
			res:  Resource{URI: uri, Name: path.Base(p), MIMEType: mimeTypeOf(p), Size: &size},
			rel:  p,
			data: data,
		})
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	entries := len(files)
	for _, d := range dirs {
		if !withFiles[d] {
			entries++
		}
	}
	if entries > maxSkillFiles {
		return nil, nil, errTooManyEntries
	}
	slices.SortFunc(files, func(a, b *skillFile) int { return strings.Compare(a.res.URI, b.res.URI) })
	return files, dirs, nil
}

var errTooManyEntries = fmt.Errorf("over %d files (directories that hold no file count as files), the extension's limit per skill", maxSkillFiles)

// hidden reports whether p, a path of fs.WalkDir, names a file or directory
// whose name begins with a dot (the walk's root "." is not hidden).
func hidden(p string) bool {
	return p != "." && strings.HasPrefix(path.Base(p), ".")
}

// skipHidden is what a walk returns for a hidden entry d: skip it, and all
// under it when it is a directory.
func skipHidden(d fs.DirEntry) error {
	if d.IsDir() {
		return fs.SkipDir
	}
	return nil
}

// readBounded reads the file p of fsys, failing when it holds over budget
// bytes: what is left of a skill's maxSkillBytes or, when all, of
// maxSkillsBytes.
func readBounded(fsys fs.FS, p string, budget int, all bool) ([]byte, error) {
	f, err := fsys.Open(p)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read-only: a close error changes nothing
	data, err := io.ReadAll(io.LimitReader(f, int64(budget)+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if len(data) > budget && all {
		return nil, fmt.Errorf("%s: the skills' files are over %d bytes, the limit of all the skills a server serves", p, maxSkillsBytes)
	}
	if len(data) > budget {
		return nil, fmt.Errorf("%s: the skill's files are over %d bytes, the extension's limit per skill", p, maxSkillBytes)
	}
	return data, nil
}

// mimeTypeOf returns the MIME type of a file by its extension (a fixed
// table, so that a skill is served alike on every machine), else
// application/octet-stream.
func mimeTypeOf(name string) string {
	switch strings.ToLower(path.Ext(name)) {
	case ".md", ".markdown":
		return "text/markdown"
	case ".txt":
		return "text/plain"
	case ".py":
		return "text/x-python"
	case ".sh", ".bash":
		return "text/x-shellscript"
	case ".js", ".mjs":
		return "text/javascript"
	case ".ts":
		return "text/x-typescript"
	case ".go":
		return "text/x-go"
	case ".html":
		return "text/html"
	case ".css":
		return "text/css"
	case ".csv":
		return "text/csv"
	case ".json":
		return "application/json"
	case ".yaml", ".yml":
		return "application/yaml"
	case ".xml":
		return "application/xml"
	case ".toml":
		return "application/toml"
	case ".svg":
		return "image/svg+xml"
	case ".png":
		return "image/png"
	case ".jpg", ".jpeg":
		return "image/jpeg"
	case ".gif":
		return "image/gif"
	case ".webp":
		return "image/webp"
	case ".pdf":
		return "application/pdf"
	case ".zip":
		return "application/zip"
	}
	return "application/octet-stream"
}

// textual reports whether content of mimeType is text.
func textual(mimeType string) bool {
	switch mimeType {
	case "application/json", "application/yaml", "application/xml", "application/toml", "image/svg+xml":
		return true
	}
	return strings.HasPrefix(mimeType, "text/")
}
