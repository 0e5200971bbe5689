package main

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pagesModes are the ways to build vigil that the toolchain offers on
// linux/amd64 and arm64, each a process whose executable is mapped
// differently: a position-independent executable's read-only mappings
// hold pages the loader relocated (RELRO), an externally linked one is
// laid out by the C linker, a race build carries the race runtime, a
// static one has no loader at all.
var pagesModes = []struct {
	name  string
	flags []string // go build's flags besides -ldflags
	ld    string   // -ldflags besides the version and pagesEvery
	env   []string
	cc    bool // needs a C toolchain
}{
	{name: "default"},
	{name: "pie", flags: []string{"-buildmode=pie"}},
	{name: "race", flags: []string{"-race"}, env: []string{"CGO_ENABLED=1"}, cc: true},
	{name: "static", env: []string{"CGO_ENABLED=0"}},
	{name: "external", ld: "-linkmode=external", env: []string{"CGO_ENABLED=1"}, cc: true},
}

// pagesReleasesWanted is how many releases of the executable's pages each
// build survives at idle, and as many again under load.
const pagesReleasesWanted = 10

// TestExecutablePagesEveryBuildMode builds vigil in every build mode (see
// pagesModes), releasing its executable's pages every second whatever the
// load (main.pagesEvery), and checks that each process survives 10
// releases at idle and 10 under a little load, answering a call after
// each, and that the releases give back pages. A PIE released the
// pages its loader had relocated and died at its first rest (issue 88).
// It runs on the machine's own architecture: it has been run on
// linux/amd64 only, no arm64 machine being at hand (arm64's PIE is the same
// case: the release reads the same pagemap bits there).
func TestExecutablePagesEveryBuildMode(t *testing.T) {
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skipf("the build modes are those of linux/amd64 and arm64, not %s", runtime.GOARCH)
	}
	if testing.Short() {
		t.Skip("five builds of vigil: skipped with -short")
	}
	t.Parallel()
	dir := t.TempDir()
	bins := make(map[string]string, len(pagesModes))
	for _, m := range pagesModes {
		if m.cc {
			if _, err := exec.LookPath(goEnv(t, "CC")); err != nil {
				missingComponent(t, fmt.Sprintf("the %s build needs a C toolchain: %v", m.name, err))
				continue
			}
		}
		bin := filepath.Join(dir, "vigil-"+m.name)
		args := append([]string{"build"}, m.flags...)
		args = append(args, "-ldflags", strings.TrimSpace("-X main.version=dev -X main.pagesEvery=2 "+m.ld), "-o", bin, ".")
		cmd := exec.Command("go", args...)
		cmd.Env = append(os.Environ(), m.env...)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "go %s:\n%s", strings.Join(args, " "), out)
		bins[m.name] = bin
	}
	for _, m := range pagesModes {
		bin, ok := bins[m.name]
		if !ok {
			continue
		}
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			checkReleasesSurvived(t, bin)
		})
	}
}

// checkReleasesSurvived starts the vigil binary bin, built with
// main.pagesEvery, and checks that it answers a call after each of
// pagesReleasesWanted releases at idle, then serves a little load without
// a failure through as many more.
func checkReleasesSurvived(t *testing.T, bin string) {
	svc := startBinary(t, bin, "-http", "127.0.0.1:0", "-log-level", "debug")
	hc := &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}
	defer hc.CloseIdleConnections()
	c := &svcClient{hc: hc, url: svc.base + "/mcp"}
	initRes, err := c.rpc(`1`, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"pages-test","version":"1"}}`)
	require.NoError(t, err)
	require.Nil(t, initRes.Error)
	require.NoError(t, c.notify("notifications/initialized"))
	echo := func(id int) error {
		m, err := c.rpc(strconv.Itoa(id), "tools/call", fmt.Sprintf(`{"name":"echo","arguments":{"text":"call %d"}}`, id))
		switch {
		case err != nil:
			return err
		case m.Error != nil:
			return fmt.Errorf("call %d: %d %s", id, m.Error.Code, m.Error.Message)
		case !strings.Contains(string(m.Result), fmt.Sprintf(`"call %d"`, id)):
			return fmt.Errorf("call %d answered %s", id, m.Result)
		}
		return nil
	}

	// At idle: a release, then a call that maps back what it runs.
	for i := range pagesReleasesWanted {
		waitReleases(t, svc, i+1)
		require.NoError(t, echo(100+i), "after release %d at idle", i+1)
	}
	released := releasedBytes(svc.logs.String())
	require.NotEmpty(t, released)
	assert.Greater(t, released[0], uint64(4<<20), "the first release gave back little of what starting up touched")
	t.Logf("released at idle (KiB): %v", kib(released))

	// Under a little load: a call every 10 ms on one session, through as
	// many releases.
	stop := make(chan struct{})
	var calls atomic.Int64
	var failed error
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for i := 1000; ; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if err := echo(i); err != nil {
				failed = err
				return
			}
			calls.Add(1)
		}
	})
	for i := range pagesReleasesWanted {
		waitReleases(t, svc, pagesReleasesWanted+i+1)
	}
	close(stop)
	wg.Wait()
	require.NoError(t, failed, "a call under load failed")
	assert.Greater(t, calls.Load(), int64(pagesReleasesWanted), "too few calls under load")
	require.NoError(t, echo(2), "after the releases under load")
	logs := svc.logs.String()
	assert.NotContains(t, logs, "executable pages stay resident")
	t.Logf("%d calls under load; released (KiB): %v", calls.Load(), kib(releasedBytes(logs)[pagesReleasesWanted:]))
	if kept, ok := exeAnonymous(t, svc.cmd.Process.Pid, bin); ok {
		t.Logf("the executable's read-only pages written by the loader, kept: %d KiB", kept>>10)
	}
}

// releasedLine is the log line of a release of the executable's pages.
var releasedLine = regexp.MustCompile(`msg="executable pages released" released_bytes=(\d+)`)

// releasedBytes returns the bytes each release logged so far gave back.
func releasedBytes(logs string) []uint64 {
	var out []uint64
	for _, m := range releasedLine.FindAllStringSubmatch(logs, -1) {
		n, _ := strconv.ParseUint(m[1], 10, 64)
		out = append(out, n)
	}
	return out
}

// waitReleases waits until svc has logged n releases, failing the test if
// it exits or 30 s pass first.
func waitReleases(t *testing.T, svc *svcProcess, n int) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		grew := svc.logs.grown()
		if len(releasedBytes(svc.logs.String())) >= n {
			return
		}
		select {
		case <-grew:
		case err := <-svc.exited:
			svc.exited <- err
			t.Fatalf("vigil exited before release %d: %v", n, err)
		case <-deadline:
			t.Fatalf("release %d not logged within 30 s", n)
		}
	}
}

// kib returns bytes in KiB.
func kib(bytes []uint64) []uint64 {
	out := make([]uint64, len(bytes))
	for i, b := range bytes {
		out[i] = b >> 10
	}
	return out
}

// exeAnonymous returns the Anonymous bytes (pages written: copied from the
// file) of the private read-only mappings of exe in process pid, from its
// smaps.
func exeAnonymous(t *testing.T, pid int, exe string) (uint64, bool) {
	t.Helper()
	smaps, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		return 0, false
	}
	var sum uint64
	ours := false
	for line := range strings.Lines(string(smaps)) {
		f := strings.Fields(line)
		switch {
		case len(f) >= 5 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":"):
			ours = len(f) == 6 && f[5] == exe && f[1][1] == '-' && f[1][3] == 'p'
		case ours && len(f) == 3 && f[0] == "Anonymous:":
			kb, err := strconv.ParseUint(f[1], 10, 64)
			require.NoError(t, err)
			sum += kb << 10
		}
	}
	return sum, true
}

// goEnv returns go env name.
func goEnv(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("go", "env", name).Output()
	require.NoError(t, err)
	return strings.TrimSpace(string(out))
}
