package validate

import (
	"io/fs"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pinnedRE is an image reference with a tag and a digest: the tag says
// which version it is, the digest is what is pulled.
var pinnedRE = regexp.MustCompile(`^[a-z0-9][a-z0-9./_-]*(?::[0-9]+)?(?:/[a-z0-9./_-]+)*:[A-Za-z0-9_][A-Za-z0-9_.-]*@sha256:[0-9a-f]{64}$`)

// imageLineRE finds the image of a compose service or a Kubernetes
// container.
var imageLineRE = regexp.MustCompile(`(?m)^\s*(?:-\s+)?image:\s*["']?([^"'\s#]+)`)

// localImage reports whether ref is the vigil image this repository
// builds, which has no digest until it is built.
func localImage(ref string) bool {
	return ref == "vigil" || strings.HasPrefix(ref, "vigil:")
}

// checkPinned returns why ref is not acceptable, or "".
func checkPinned(ref string) string {
	switch {
	case localImage(ref):
		return ""
	case !pinnedRE.MatchString(ref):
		return "not pinned as IMAGE:TAG@sha256:DIGEST"
	}
	return ""
}

func TestCheckPinned(t *testing.T) {
	for ref, ok := range map[string]bool{
		"redis:8.2@sha256:" + strings.Repeat("a1", 32):                        true,
		"gcr.io/distroless/static:nonroot@sha256:" + strings.Repeat("0", 64):  true,
		"registry.example:5000/team/app:v1@sha256:" + strings.Repeat("f", 64): true,
		"vigil:compose": true,
		"redis:8.2":     false,
		"redis":         false,
		"redis@sha256:" + strings.Repeat("a", 64):     false, // which version is it?
		"redis:8.2@sha256:" + strings.Repeat("a", 63): false,
		"redis:8.2@sha256:" + strings.Repeat("A", 64): false,
		"redis:latest@sha512:abc":                     false,
		"${REDIS_IMAGE}":                              false,
	} {
		assert.Equal(t, ok, checkPinned(ref) == "", "%s", ref)
	}
}

// TestImagesPinnedByDigest checks that every image the deploy kit pulls,
// in every compose file, Kubernetes manifest and Dockerfile stage, is
// pinned by digest: a tag can be moved to other content, by its owner or
// by whoever takes the registry account over.
func TestImagesPinnedByDigest(t *testing.T) {
	deploy := repoPath(t, "deploy")
	var files []string
	require.NoError(t, filepath.WalkDir(deploy, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(deploy, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "validate" {
				return filepath.SkipDir
			}
			return nil
		}
		compose := strings.HasPrefix(rel, "compose") && (strings.HasSuffix(rel, ".yaml") || strings.HasSuffix(rel, ".yml"))
		k8s := strings.HasPrefix(rel, "k8s") && (strings.HasSuffix(rel, ".yaml") || strings.HasSuffix(rel, ".yml"))
		if compose || k8s {
			files = append(files, path)
		}
		return nil
	}))
	require.NotEmpty(t, files)
	seen := 0
	for _, path := range files {
		src := readRepoFile(t, mustRel(t, path))
		for _, m := range imageLineRE.FindAllSubmatch(src, -1) {
			seen++
			ref := string(m[1])
			if why := checkPinned(ref); why != "" {
				t.Errorf("%s: image %s: %s", mustRel(t, path), ref, why)
			}
		}
	}
	assert.GreaterOrEqual(t, seen, 6, "the compose and Kubernetes files name their images")

	stages := map[string]bool{}
	for _, in := range parseDockerfile(t, readRepoFile(t, dockerfile)) {
		if in.cmd != "FROM" {
			continue
		}
		fields := strings.Fields(in.args)
		for len(fields) > 0 && strings.HasPrefix(fields[0], "--") {
			fields = fields[1:] // --platform=...
		}
		require.NotEmpty(t, fields, "FROM %s", in.args)
		ref := fields[0]
		// A stage built from an earlier stage pulls nothing.
		if !stages[strings.ToLower(ref)] && ref != "scratch" {
			if why := checkPinned(ref); why != "" || localImage(ref) {
				t.Errorf("%s: FROM %s: %s", dockerfile, ref, why)
			}
		}
		if len(fields) == 3 && strings.EqualFold(fields[1], "AS") {
			stages[strings.ToLower(fields[2])] = true
		}
	}
}

// mustRel returns path relative to the repository root, slash-separated.
func mustRel(t *testing.T, path string) string {
	t.Helper()
	rel, err := filepath.Rel(repoRoot(t), path)
	require.NoError(t, err)
	return filepath.ToSlash(rel)
}
