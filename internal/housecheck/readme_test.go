package housecheck

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/transport/protocol"
)

// readmeMaxLines is the most lines README.md may have: it is a front page
// for users, and what does not fit goes to docs/.
const readmeMaxLines = 200

// readmeBeforeIssue43 is the last commit whose README was a measurement
// log, the case the rules must catch.
const readmeBeforeIssue43 = "ff723fc30fb3bc2945fa188751e7652bf8af14e7"

// A figureRule finds one kind of benchmark figure in a line of the README.
// Figures belong in docs/performance.md, whose table is replaced when they
// change; in the README they go stale unnoticed.
type figureRule struct {
	kind string
	re   *regexp.Regexp
}

var figureRules = []figureRule{
	{"ratio", regexp.MustCompile(`\b\d+(?:\.\d+)?\s*(?:×|x\b)`)},
	{"throughput", regexp.MustCompile(`(?i)\breq/s\b|\bns/op\b|\bB/op\b|\ballocs/op\b`)},
	{"microseconds", regexp.MustCompile(`\b\d+(?:\.\d+)?\s*(?:µs|μs|us)\b`)},
	{"percentage", regexp.MustCompile(`\b\d+(?:\.\d+)?\s*%`)},
	{"date", regexp.MustCompile(`\b20\d\d-\d\d-\d\d\b`)},
	{"commit", regexp.MustCompile(`\b[0-9a-f]{7,40}\b`)},
}

// readmeProblem is one broken rule: a kind, and where (line 0 for the
// whole file).
type readmeProblem struct {
	kind  string
	line  int
	match string
}

func (p readmeProblem) String() string {
	return fmt.Sprintf("README.md:%d: %s %q", p.line, p.kind, p.match)
}

// readmeProblems returns every house rule text breaks as a README: too
// many lines, or a benchmark figure (a ratio, a throughput, microseconds,
// a percentage, a run date, a commit hash). Protocol versions are dates
// that are not figures.
func readmeProblems(text string) []readmeProblem {
	var out []readmeProblem
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if len(lines) > readmeMaxLines {
		out = append(out, readmeProblem{kind: "length", match: fmt.Sprintf("%d lines, over %d", len(lines), readmeMaxLines)})
	}
	versions := protocol.Versions()
	for i, line := range lines {
		for _, rule := range figureRules {
			for _, m := range rule.re.FindAllString(line, -1) {
				if rule.kind == "date" && slices.Contains(versions, m) {
					continue
				}
				if rule.kind == "commit" && !isCommitHash(m) {
					continue
				}
				out = append(out, readmeProblem{kind: rule.kind, line: i + 1, match: m})
			}
		}
	}
	return out
}

// isCommitHash reports whether a run of hex digits looks like an
// abbreviated commit hash rather than a word or a number: it has both.
func isCommitHash(s string) bool {
	return strings.ContainsAny(s, "0123456789") && strings.ContainsAny(s, "abcdef")
}

func problemKinds(ps []readmeProblem) []string {
	var kinds []string
	for _, p := range ps {
		if !slices.Contains(kinds, p.kind) {
			kinds = append(kinds, p.kind)
		}
	}
	slices.Sort(kinds)
	return kinds
}

// TestReadme checks README.md against the house rules: at most 200 lines
// and no benchmark figure. (Its links are checked with the docs',
// TestDocLinksResolve.)
func TestReadme(t *testing.T) {
	text, err := os.ReadFile(filepath.Join(docsRoot(t), "README.md"))
	require.NoError(t, err)
	assert.Empty(t, readmeProblems(string(text)), "README.md is for users: figures go to docs/performance.md")
}

// TestReadmeRulesCatch shows that the rules fail where they must: on
// each kind of figure, on a long file, and on the README before issue 43;
// and pass on protocol versions and on plain counts.
func TestReadmeRulesCatch(t *testing.T) {
	cases := []struct {
		name string
		text string
		want []string // the kinds of problem found, sorted
	}{
		{
			name: "ratios",
			text: "Vigil reaches about 0.86× the plain handler; one replica serves 0.88x.\n",
			want: []string{"ratio"},
		},
		{
			name: "throughput and microseconds",
			text: "42,000 req/s; 35.2 µs per request for vigil, 28.5 us for the floor; 120 ns/op\n",
			want: []string{"microseconds", "throughput"},
		},
		{
			name: "share of the CPU",
			text: "the span is 12% of vigil's CPU, the log line 4.5 %\n",
			want: []string{"percentage"},
		},
		{
			name: "run dates and commits",
			text: "Six runs on a 2-core VM (2026-11-24), each followed by one of a62fb95.\n",
			want: []string{"commit", "date"},
		},
		{
			name: "too long",
			text: strings.Repeat("a line\n", readmeMaxLines+1),
			want: []string{"length"},
		},
		{
			name: "protocol versions, counts and limits pass",
			text: "2025-06-18 sessions and 2026-07-28 requests; a test hammers this with 10,000 requests;\n" +
				"HTTP 415, 406 or 413; a body cap of 4 MiB; `-32602`; the decade added a deadbeef cafe.\n",
		},
		{
			name: "exactly the limit passes",
			text: strings.Repeat("a line\n", readmeMaxLines),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, problemKinds(readmeProblems(tc.text)))
		})
	}

	t.Run("the README before issue 43", func(t *testing.T) {
		root := docsRoot(t)
		old, err := exec.Command("git", "-C", root, "show", readmeBeforeIssue43+":README.md").Output()
		var exitErr *exec.ExitError
		if errors.Is(err, exec.ErrNotFound) || errors.As(err, &exitErr) {
			t.Skipf("git cannot show %s (a shallow clone?): %v", readmeBeforeIssue43, err)
		}
		require.NoError(t, err)
		got := readmeProblems(string(old))
		assert.Equal(t, []string{"commit", "date", "length", "microseconds", "percentage", "ratio", "throughput"}, problemKinds(got))
		assert.Greater(t, len(got), 100, "every figure is reported, not only the first")
		assert.Contains(t, linkProblems(root, "README.md", string(old)),
			"README.md: cmd/vigil-bench/ROUNDS.md: no such file", "its link to the run history's old place is broken now")
	})
}

// docsRoot returns the repository's root: the directory of go.mod above
// the test.
func docsRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, dir, parent, "no go.mod above the test")
		dir = parent
	}
}
