//go:build linux

package main

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// stdioBackpressureRSS is what a vigil -stdio whose client never reads may
// hold, whatever the client writes (issue 56, N3).
const stdioBackpressureRSS = 200 << 20

// A vigil -stdio whose client writes 1,000 echo calls of 512 KiB and never
// reads stops reading them once its unwritten answers reach their cap: the
// client ends up blocked writing to vigil's stdin, and vigil stays under
// 200 MiB. When the client starts reading, every call is answered, and
// vigil still answers and exits cleanly.
func TestStdioUnreadingClientIsHeldBack(t *testing.T) {
	const calls, size = 1000, 512 << 10
	inR, inW, err := os.Pipe()
	require.NoError(t, err)
	cmd := exec.Command(vigilBin, "-stdio")
	cmd.Stdin = inR
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	require.NoError(t, inR.Close()) // the child keeps its copy
	lines := bufio.NewReaderSize(stdout, 1<<20)
	pid := cmd.Process.Pid

	_, err = io.WriteString(inW, initializeLine+"\n"+`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	require.NoError(t, err)
	line, err := lines.ReadString('\n')
	require.NoError(t, err)
	require.Contains(t, line, `"id":1,"result"`)

	text := strings.Repeat("x", size)
	var sent atomic.Int64
	wrote := make(chan error, 1)
	go func() {
		for i := range calls {
			_, err := io.WriteString(inW, `{"jsonrpc":"2.0","id":`+strconv.Itoa(i+2)+
				`,"method":"tools/call","params":{"name":"echo","arguments":{"text":"`+text+`"}}}`+"\n")
			if err != nil {
				wrote <- err
				return
			}
			sent.Add(1)
		}
		wrote <- nil
	}()

	// Held back: stdin's pipe full, and no call taken off it for a second
	// (20 looks in a row), with the writer still short of its 1,000. On
	// a vigil that reads whatever comes, the writer finishes instead.
	pipeSize, err := unix.FcntlInt(inW.Fd(), unix.F_GETPIPE_SZ, 0)
	require.NoError(t, err)
	var peak int64
	stalled, last := 0, int64(-1)
	for stalled < 20 {
		peak = max(peak, vmRSS(t, pid))
		select {
		case err := <-wrote:
			require.NoError(t, err)
			for range 20 { // what vigil read, it now holds
				peak = max(peak, vmRSS(t, pid))
				time.Sleep(50 * time.Millisecond)
			}
			t.Fatalf("vigil read all %d calls of a client that reads nothing; VmRSS peaked at %d MiB", calls, peak>>20)
		case <-time.After(50 * time.Millisecond):
		}
		queued, err := unix.IoctlGetInt(int(inW.Fd()), unix.TIOCINQ) // FIONREAD: bytes in the pipe
		require.NoError(t, err)
		n := sent.Load()
		if queued >= pipeSize && n == last {
			stalled++
		} else {
			stalled = 0
		}
		last = n
	}
	peak = max(peak, vmRSS(t, pid))
	t.Logf("the client is blocked after %d of %d calls; vigil's VmRSS peaked at %d MiB", last, calls, peak>>20)
	assert.Less(t, peak, int64(stdioBackpressureRSS), "VmRSS of vigil held back by its client")

	// The client reads: every call is answered, in whatever order.
	answered := make(map[int]bool, calls)
	for len(answered) < calls {
		line, err := lines.ReadString('\n')
		require.NoError(t, err, "after %d answers", len(answered))
		id, ok := strings.CutPrefix(line, `{"jsonrpc":"2.0","id":`)
		require.True(t, ok, "%.200s", line)
		n, err := strconv.Atoi(id[:strings.IndexByte(id, ',')])
		require.NoError(t, err)
		require.Contains(t, line[:min(len(line), 100)], `"result"`, "answer to %d: %.200s", n, line)
		require.Greater(t, len(line), size, "answer to %d", n)
		require.False(t, answered[n], "answer to %d twice", n)
		answered[n] = true
	}
	require.NoError(t, <-wrote)

	_, err = io.WriteString(inW, `{"jsonrpc":"2.0","id":"after","method":"ping"}`+"\n")
	require.NoError(t, err)
	line, err = lines.ReadString('\n')
	require.NoError(t, err)
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":"after","result":{}}`, line)

	// Its handlers are all done: it exits 0 at once when stdin ends.
	require.NoError(t, inW.Close())
	rest, err := io.ReadAll(lines)
	require.NoError(t, err)
	assert.Empty(t, rest)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		require.NoError(t, err, "exit status must be 0")
	case <-time.After(5 * time.Second):
		t.Fatal("vigil did not exit within 5 s of stdin's end")
	}
}
