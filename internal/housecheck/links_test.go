package housecheck

import (
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	// inlineLinkRE finds an inline link or image: [text](target "title").
	inlineLinkRE = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	// refLinkRE finds a link reference definition: [label]: target.
	refLinkRE = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:\s*<?([^\s>]+)>?`)
	// codeSpanRE finds an inline code span, whose text is not markdown.
	codeSpanRE = regexp.MustCompile("``.*?``|`[^`]*`")
	// atxHeadingRE finds a heading: # Title, with optional closing hashes.
	atxHeadingRE = regexp.MustCompile(`^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$`)
	// htmlAnchorRE finds an explicit anchor: <a id="x"> or <a name="x">.
	htmlAnchorRE = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	// schemeRE finds a link with a scheme (https:, mailto:): not checked.
	schemeRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)
	// fenceRE finds the opening or closing line of a fenced code block.
	fenceRE = regexp.MustCompile("^ {0,3}(```|~~~)")
)

// A proseLine is a line of a markdown text outside its code blocks.
type proseLine struct {
	number int
	text   string
}

// proseLines returns the lines of a markdown text that are not in a
// fenced code block, in order; with blankCode, their inline code spans
// are blanked (a link there is not a link; a heading's code is part of its
// text).
func proseLines(text string, blankCode bool) []proseLine {
	var out []proseLine
	fence := ""
	for i, line := range strings.Split(text, "\n") {
		if m := fenceRE.FindStringSubmatch(line); m != nil {
			switch fence {
			case "":
				fence = m[1]
			case m[1]:
				fence = ""
			}
			continue
		}
		if fence != "" {
			continue
		}
		if blankCode {
			line = codeSpanRE.ReplaceAllString(line, "``")
		}
		out = append(out, proseLine{number: i + 1, text: line})
	}
	return out
}

// markdownLinks returns the targets of the links and images of a markdown
// text, outside code, in order.
func markdownLinks(text string) []string {
	var out []string
	for _, line := range proseLines(text, true) {
		for _, m := range inlineLinkRE.FindAllStringSubmatch(line.text, -1) {
			out = append(out, m[1])
		}
		if m := refLinkRE.FindStringSubmatch(line.text); m != nil {
			out = append(out, m[1])
		}
	}
	return out
}

// githubSlug returns the anchor GitHub gives a heading: its text in lower
// case, without the characters that are neither letters, marks, digits,
// connector punctuation, spaces nor hyphens, each space a hyphen.
func githubSlug(heading string) string {
	heading = inlineLinkRE.ReplaceAllStringFunc(heading, func(link string) string {
		return link[strings.Index(link, "[")+1 : strings.Index(link, "](")]
	})
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || unicode.IsLetter(r) || unicode.IsMark(r) || unicode.IsDigit(r) || unicode.Is(unicode.Pc, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// headingAnchors returns the anchors of a markdown text: its headings'
// slugs, a repeated slug numbered -1, -2, ... as GitHub does, and its
// explicit HTML anchors.
func headingAnchors(text string) map[string]bool {
	out := map[string]bool{}
	for _, line := range proseLines(text, false) {
		for _, m := range htmlAnchorRE.FindAllStringSubmatch(line.text, -1) {
			out[m[1]] = true
		}
		m := atxHeadingRE.FindStringSubmatch(line.text)
		if m == nil {
			continue
		}
		slug := githubSlug(m[1])
		anchor := slug
		for i := 1; out[anchor]; i++ {
			anchor = slug + "-" + strconv.Itoa(i)
		}
		out[anchor] = true
	}
	return out
}

// linkProblems returns the relative links of the markdown file rel (its
// text given, its path relative to root) that do not resolve: to no file
// or directory under root, or, with a #fragment into a markdown file, to
// no heading of it. Links with a scheme are not checked.
func linkProblems(root, rel, text string) []string {
	var problems []string
	for _, target := range markdownLinks(text) {
		if p := linkProblem(root, rel, text, target); p != "" {
			problems = append(problems, rel+": "+p)
		}
	}
	return problems
}

// linkProblem says what is wrong with one link target of the file rel, or
// returns "".
func linkProblem(root, rel, text, target string) string {
	if schemeRE.MatchString(target) {
		return ""
	}
	raw, fragment, _ := strings.Cut(target, "#")
	p, err := url.PathUnescape(raw)
	if err != nil {
		return target + ": " + err.Error()
	}
	dest := rel
	if p != "" {
		dest = path.Join(path.Dir(rel), p)
		if strings.HasPrefix(p, "/") {
			dest = path.Clean(strings.TrimPrefix(p, "/"))
		}
		if dest == ".." || strings.HasPrefix(dest, "../") {
			return target + ": outside the repository"
		}
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(dest))); err != nil {
			return target + ": no such file"
		}
	}
	if fragment == "" || !strings.HasSuffix(dest, ".md") {
		return ""
	}
	destText := text
	if dest != rel {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(dest)))
		if err != nil {
			return target + ": " + err.Error()
		}
		destText = string(b)
	}
	if !headingAnchors(destText)[fragment] {
		return target + ": no heading " + dest + "#" + fragment
	}
	return ""
}

// docFiles returns the markdown files whose links the house rules check:
// README.md, docs/**/*.md and deploy/*.md, relative to root.
func docFiles(t *testing.T, root string) []string {
	t.Helper()
	files := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".md") {
			return err
		}
		rel, err := filepath.Rel(root, p)
		files = append(files, filepath.ToSlash(rel))
		return err
	})
	require.NoError(t, err)
	deploy, err := filepath.Glob(filepath.Join(root, "deploy", "*.md"))
	require.NoError(t, err)
	for _, p := range deploy {
		files = append(files, "deploy/"+filepath.Base(p))
	}
	return files
}

// TestDocLinksResolve checks every relative link of README.md, docs/ and
// deploy/*.md: its file exists, and its #fragment names a heading.
func TestDocLinksResolve(t *testing.T) {
	root := docsRoot(t)
	files := docFiles(t, root)
	require.Contains(t, files, "docs/security.md", "the walk must reach docs/")
	require.Contains(t, files, "deploy/SCALING.md", "the glob must reach deploy/")
	links := 0
	for _, rel := range files {
		text, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		require.NoError(t, err)
		links += len(markdownLinks(string(text)))
		assert.Empty(t, linkProblems(root, rel, string(text)))
	}
	assert.Greater(t, links, 20, "the docs link to each other: a scan that finds no link is broken")
}

// TestLinkProblemsCatch shows the link check failing on each kind of
// broken link, and passing code, external links and GitHub's anchors.
func TestLinkProblemsCatch(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "docs", "perf"), 0o755))
	page := "# A page\n\n## With `-redis`: shared (recommended)\n\n## Notes\n\n## Notes\n\n" +
		"```sh\n# not a heading\n```\n\n<a id=\"custom\"></a>\n"
	require.NoError(t, os.WriteFile(filepath.Join(root, "docs", "page.md"), []byte(page), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(root, "docs", "perf", "ROUNDS.md"), []byte("# Rounds\n"), 0o600))

	cases := []struct {
		name string
		text string
		want []string
	}{
		{
			name: "resolving links pass",
			text: "[page](docs/page.md) ![img](docs/perf/ROUNDS.md) [dir](docs/perf/)\n" +
				"[a](docs/page.md#with--redis-shared-recommended) [b](docs/page.md#notes-1) [c](docs/page.md#custom)\n" +
				"[self](#top) [ext](https://example.com/x.md#nowhere) [mail](mailto:a@example.com)\n" +
				"[ref]: docs/page.md#notes\n\n# Top\n",
		},
		{
			name: "links in code are not links",
			text: "`[x](missing.md)`\n\n```md\n[y](missing.md)\n```\n",
		},
		{
			name: "missing files",
			text: "[old](cmd/vigil-bench/ROUNDS.md) and ![pic](docs/pic.png)\n[ref]: docs/gone.md\n",
			want: []string{
				"README.md: cmd/vigil-bench/ROUNDS.md: no such file",
				"README.md: docs/pic.png: no such file",
				"README.md: docs/gone.md: no such file",
			},
		},
		{
			name: "missing headings",
			text: "[a](docs/page.md#with-redis-shared-recommended) [b](docs/page.md#notes-2) [c](#nowhere)\n# not-nowhere\n```\n# nowhere\n```\n",
			want: []string{
				"README.md: docs/page.md#with-redis-shared-recommended: no heading docs/page.md#with-redis-shared-recommended",
				"README.md: docs/page.md#notes-2: no heading docs/page.md#notes-2",
				"README.md: #nowhere: no heading README.md#nowhere",
			},
		},
		{
			name: "outside the repository",
			text: "[up](../elsewhere.md)\n",
			want: []string{"README.md: ../elsewhere.md: outside the repository"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, linkProblems(root, "README.md", tc.text))
		})
	}
}

// TestGitHubSlug checks the anchors against those GitHub renders for the
// headings of this repository's docs.
func TestGitHubSlug(t *testing.T) {
	for heading, want := range map[string]string{
		"With `-redis`: any replica serves any session (recommended)": "with--redis-any-replica-serves-any-session-recommended",
		"2025-11-25 clients: sessions need affinity":                  "2025-11-25-clients-sessions-need-affinity",
		"Exposure: the admin endpoints":                               "exposure-the-admin-endpoints",
		"Why hashing on Mcp-Session-Id is not enough":                 "why-hashing-on-mcp-session-id-is-not-enough",
		"The flags_and [a link](x.md) — Über":                         "the-flags_and-a-link--über",
	} {
		assert.Equal(t, want, githubSlug(heading), heading)
	}
}
