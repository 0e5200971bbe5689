package validate

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const dockerfile = "deploy/Dockerfile"

// instruction is one Dockerfile instruction with its continuation lines
// joined.
type instruction struct {
	cmd  string // upper case: FROM, RUN, ...
	args string
}

// parseDockerfile splits a Dockerfile into instructions; comments and blank
// lines are dropped, backslash continuations joined.
func parseDockerfile(t *testing.T, src []byte) []instruction {
	t.Helper()
	var out []instruction
	var cur strings.Builder
	for line := range strings.SplitSeq(string(src), "\n") {
		trimmed := strings.TrimSpace(line)
		if cur.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if cont, ok := strings.CutSuffix(trimmed, `\`); ok {
			cur.WriteString(cont + " ")
			continue
		}
		cur.WriteString(trimmed)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		out = append(out, instruction{cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)})
		cur.Reset()
	}
	require.Zero(t, cur.Len(), "the Dockerfile ends inside a continuation")
	return out
}

// goBuildCommand returns the shell command of the RUN instruction that
// builds vigil, without its --mount flags.
func goBuildCommand(t *testing.T, ins []instruction) string {
	t.Helper()
	for _, in := range ins {
		if in.cmd != "RUN" || !strings.Contains(in.args, "go build") {
			continue
		}
		fields := strings.Fields(in.args)
		for len(fields) > 0 && strings.HasPrefix(fields[0], "--") {
			fields = fields[1:]
		}
		return strings.Join(fields, " ")
	}
	t.Fatal("no RUN instruction runs go build")
	return ""
}

var goDirectiveRE = regexp.MustCompile(`(?m)^go (\d+\.\d+)(\.\d+)?$`)

// TestDockerfile checks the image recipe: a Go builder matching go.mod, a
// static trimmed build of ./cmd/vigil with the version stamped, a distroless
// or scratch base, a non-root user, port 8080 and an entrypoint that listens
// on all interfaces.
func TestDockerfile(t *testing.T) {
	ins := parseDockerfile(t, readRepoFile(t, dockerfile))
	var froms []string
	for _, in := range ins {
		if in.cmd == "FROM" {
			froms = append(froms, in.args)
		}
	}
	require.Len(t, froms, 2, "a builder stage and the final stage")

	m := goDirectiveRE.FindSubmatch(readRepoFile(t, "go.mod"))
	require.NotNil(t, m, "go.mod has no go directive")
	builder := regexp.MustCompile(`^--platform=\$BUILDPLATFORM golang:(\d+\.\d+)(?:\.\d+)?@sha256:[0-9a-f]{64} AS build$`).FindStringSubmatch(froms[0])
	if assert.NotNil(t, builder, "the builder is --platform=$BUILDPLATFORM golang:VERSION@sha256:DIGEST AS build: %s", froms[0]) {
		assert.Equal(t, string(m[1]), builder[1], "the builder's Go is go.mod's")
	}

	final := strings.Fields(froms[1])[0]
	assert.True(t, final == "scratch" || strings.HasPrefix(final, "gcr.io/distroless/static"), "final base %s", final)

	build := goBuildCommand(t, ins)
	for _, want := range []string{"CGO_ENABLED=0 ", " -trimpath ", " -tags grpcnotrace ", `-ldflags "-s -w -X main.version=${VERSION}"`, " ./cmd/vigil"} {
		assert.Contains(t, build, want)
	}

	var user, expose, entrypoint string
	for _, in := range ins {
		switch in.cmd {
		case "USER":
			user = in.args
		case "EXPOSE":
			expose = in.args
		case "ENTRYPOINT":
			entrypoint = in.args
		}
	}
	assert.Equal(t, fmt.Sprintf("%d:%d", nonrootUID, nonrootUID), user, "numeric, so that runAsNonRoot can verify it")
	assert.Equal(t, fmt.Sprint(vigilPort), expose)
	var ep []string
	require.NoError(t, json.Unmarshal([]byte(entrypoint), &ep), "ENTRYPOINT in exec form")
	assert.Equal(t, []string{"/vigil", "-http", fmt.Sprintf("0.0.0.0:%d", vigilPort)}, ep)
	assert.True(t, vigilFlags(t)["http"], "cmd/vigil has no -http flag")
}

// errDynamic is returned by checkStatic for a dynamically linked binary.
var errDynamic = errors.New("dynamically linked")

// checkStatic returns an error wrapping errDynamic if the ELF file at path
// needs a dynamic loader or shared libraries.
func checkStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	for _, p := range f.Progs {
		switch p.Type {
		case elf.PT_INTERP:
			return fmt.Errorf("%w: %s has an ELF interpreter (PT_INTERP)", errDynamic, path)
		case elf.PT_DYNAMIC:
			return fmt.Errorf("%w: %s has a dynamic section (PT_DYNAMIC)", errDynamic, path)
		}
	}
	libs, err := f.ImportedLibraries()
	if err != nil {
		return err
	}
	if len(libs) > 0 {
		return fmt.Errorf("%w: %s needs %v", errDynamic, path, libs)
	}
	return nil
}

// TestStaticBinary runs the Dockerfile's own go build command (with the
// output moved to a temporary directory) and checks that the result is a
// static ELF binary, which distroless/static and scratch need, with the
// version stamped in. Docker itself is not needed.
func TestStaticBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cmd/vigil")
	}
	build := goBuildCommand(t, parseDockerfile(t, readRepoFile(t, dockerfile)))
	require.Contains(t, build, "-o /out/vigil ")
	out := filepath.Join(t.TempDir(), "vigil")
	build = strings.Replace(build, "-o /out/vigil ", "-o "+out+" ", 1)
	const version = "v0.0.0-deploy-validate"

	cmd := exec.CommandContext(t.Context(), "sh", "-c", build)
	cmd.Dir = repoRoot(t)
	cmd.Env = append(os.Environ(), "VERSION="+version)
	output, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s\n%s", build, output)

	require.NoError(t, checkStatic(out))
	f, err := elf.Open(out)
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Close() })
	assert.Equal(t, elf.ET_EXEC, f.Type, "a position-dependent static executable")
	bin, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.True(t, bytes.Contains(bin, []byte(version)), "-X main.version did not stamp the version: does cmd/vigil still have a main.version variable?")
	assert.False(t, bytes.Contains(bin, []byte(repoRoot(t))), "-trimpath: the binary holds the build directory")
}

// TestCheckStaticRejectsDynamicBinaries shows that checkStatic can fail:
// the system shell is dynamically linked.
func TestCheckStaticRejectsDynamicBinaries(t *testing.T) {
	sh, err := exec.LookPath("sh")
	require.NoError(t, err)
	sh, err = filepath.EvalSymlinks(sh)
	require.NoError(t, err)
	require.ErrorIs(t, checkStatic(sh), errDynamic)
}
