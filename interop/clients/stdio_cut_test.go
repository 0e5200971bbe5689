package clients

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"regexp"
	"sync"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Over stdio there is no /metrics: the cause is read from vigil's log
// line of each request (-log-level debug logs the cancelled ones), and
// the call is countdown (from 100, 1.5 s), whose first progress
// notification tells the client that its handler runs.
var countdownCancelled = regexp.MustCompile(`msg=request method=tools/call tool=countdown .*outcome=cancelled cause=([a-z_]+)`)

// stdioArgs are vigil's arguments over stdio in these tests.
var stdioArgs = []string{"-stdio", "-log-level", "debug"}

// stdioCutAfter is how long into a countdown the client cuts it at the
// earliest, once its first progress came.
const stdioCutAfter = 200 * time.Millisecond

// causeLog collects the causes of vigil's cancelled countdown calls from
// its stderr.
type causeLog struct {
	mu     sync.Mutex
	causes []string
	done   chan struct{}
}

// watchCauses reads vigil's stderr from r until it ends.
func watchCauses(r io.Reader) *causeLog {
	l := &causeLog{done: make(chan struct{})}
	go func() {
		defer close(l.done)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			if m := countdownCancelled.FindStringSubmatch(sc.Text()); m != nil {
				l.mu.Lock()
				l.causes = append(l.causes, m[1])
				l.mu.Unlock()
			}
		}
	}()
	return l
}

func (l *causeLog) snapshot() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.causes...)
}

// countdownArgs is a countdown long enough to be cut.
var countdownArgs = map[string]any{"from": 100}

// TestCancelStdio: over stdio, go-sdk (both eras) and mcp-go (which sends
// notifications/cancelled over stdio, not over HTTP) cancel with
// notifications/cancelled: client_cancel, 20 of 20.
func TestCancelStdio(t *testing.T) {
	t.Parallel() // its own servers: see doc.go
	t.Run("go-sdk", func(t *testing.T) {
		for _, era := range eras {
			t.Run(era, func(t *testing.T) {
				cmd := exec.Command(vigilBin, stdioArgs...)
				stderr, err := cmd.StderrPipe()
				require.NoError(t, err)
				log := watchCauses(stderr)
				progress := make(chan struct{}, 128)
				client := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-stdio-cut", Version: "1"}, &mcp.ClientOptions{
					ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
						progress <- struct{}{}
					},
				})
				cs, err := client.Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: era})
				require.NoError(t, err)
				cutStdio(t, log, progress, causeClientCancel, func(ctx context.Context) error {
					p := &mcp.CallToolParams{Name: "countdown", Arguments: countdownArgs}
					p.SetProgressToken("cut")
					_, err := cs.CallTool(ctx, p)
					return err
				})
				require.NoError(t, cs.Close())
				<-log.done
			})
		}
	})
	t.Run("mcp-go", func(t *testing.T) {
		var log *causeLog
		tr := transport.NewStdioWithOptions(vigilBin, nil, stdioArgs, transport.WithCommandFunc(
			func(ctx context.Context, command string, _ []string, args []string) (*exec.Cmd, error) {
				cmd := exec.CommandContext(ctx, command, args...)
				stderr, err := cmd.StderrPipe()
				if err != nil {
					return nil, err
				}
				log = watchCauses(stderr)
				return cmd, nil
			}))
		c := mcpclient.NewClient(tr)
		require.NoError(t, c.Start(t.Context()))
		progress := make(chan struct{}, 128)
		c.OnNotification(func(n mcpgo.JSONRPCNotification) {
			if n.Method == "notifications/progress" {
				progress <- struct{}{}
			}
		})
		mcpGoInitialize(t.Context(), t, c, "2025-11-25")
		cutStdio(t, log, progress, causeClientCancel, func(ctx context.Context) error {
			req := mcpgo.CallToolRequest{}
			req.Params.Name = "countdown"
			req.Params.Arguments = countdownArgs
			req.Params.Meta = &mcpgo.Meta{ProgressToken: "cut"}
			_, err := c.CallTool(ctx, req)
			return err
		})
		require.NoError(t, c.Close())
	})
}

// cutStdio runs rounds countdown calls through do, cancels each by its
// context once its first progress came and stdioCutAfter passed, and checks
// that vigil logged each cancelled with the cause want.
func cutStdio(t *testing.T, log *causeLog, progress chan struct{}, want string, do func(ctx context.Context) error) {
	t.Helper()
	for round := range rounds {
		begun := time.Now()
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- do(ctx) }()
		select {
		case <-progress:
		case <-time.After(20 * time.Second):
			t.Fatal("no progress from the countdown")
		}
		time.Sleep(time.Until(begun.Add(stdioCutAfter))) // the scenario, not an ordering
		cancel()
		select {
		case err := <-done:
			require.ErrorIs(t, err, context.Canceled)
		case <-time.After(20 * time.Second):
			t.Fatal("the cancelled call did not return")
		}
		waitFor(t, 15*time.Second, "vigil logs the cancelled call", func() bool { return len(log.snapshot()) == round+1 })
		for len(progress) > 0 { // the call's late progress, if any
			<-progress
		}
	}
	got := map[string]int{}
	for _, c := range log.snapshot() {
		got[c]++
	}
	t.Logf("causes of %d cuts over stdio: %v", rounds, got)
	assert.Equal(t, map[string]int{want: rounds}, got)
}

// childGoSDKStdio is a go-sdk client that runs vigil over stdio (its
// stderr going to the child's), says "calling" once its countdown's first
// progress came, and waits in the call for the test to kill it.
const childGoSDKStdio = "go-sdk-stdio"

func goSDKStdioChild(ctx context.Context, era string) error {
	cmd := exec.Command(vigilBinFromEnv(), stdioArgs...)
	cmd.Stderr = os.Stderr
	var once sync.Once
	c := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-stdio-child", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
			once.Do(func() { say("calling") })
		},
	})
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: era})
	if err != nil {
		return err
	}
	p := &mcp.CallToolParams{Name: "countdown", Arguments: countdownArgs}
	p.SetProgressToken("kill")
	_, err = cs.CallTool(ctx, p)
	return err
}

// vigilBinFromEnv is the vigil binary a child process was given.
func vigilBinFromEnv() string { return os.Getenv("VIGIL_CLIENTS_VIGIL") }

// TestKillStdio kills a go-sdk client process whose vigil runs over stdio,
// mid-call: vigil's input ends, transport_close, 20 of 20 (in each era).
func TestKillStdio(t *testing.T) {
	t.Parallel() // its own servers: see doc.go
	self, err := os.Executable()
	require.NoError(t, err)
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			got := map[string]int{}
			for range rounds {
				cmd := exec.Command(self)
				cmd.Env = append(os.Environ(), childEnv+"="+childGoSDKStdio, "VIGIL_CLIENTS_ERA="+era, "VIGIL_CLIENTS_VIGIL="+vigilBin)
				stdout, err := cmd.StdoutPipe()
				require.NoError(t, err)
				// The child's stderr and its vigil's, read until both are gone
				// (a StderrPipe would be closed by Wait, when only the child
				// has exited).
				r, w, err := os.Pipe()
				require.NoError(t, err)
				cmd.Stderr = w
				log := watchCauses(r)
				require.NoError(t, cmd.Start())
				require.NoError(t, w.Close())
				line, err := bufio.NewReader(stdout).ReadString('\n')
				require.NoError(t, err, "the child said nothing")
				require.Equal(t, "calling\n", line)
				require.NoError(t, cmd.Process.Kill())
				_ = cmd.Wait()
				select {
				case <-log.done: // vigil exited too: its stderr ended
				case <-time.After(20 * time.Second):
					t.Fatal("vigil did not exit after its client was killed")
				}
				require.NoError(t, r.Close())
				for _, c := range log.snapshot() {
					got[c]++
				}
			}
			t.Logf("causes of %d killed clients over stdio: %v", rounds, got)
			assert.Equal(t, map[string]int{causeTransportClose: rounds}, got)
		})
	}
}
