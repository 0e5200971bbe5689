package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/testkit"
)

// everythingDir holds the pinned reference server
// @modelcontextprotocol/server-everything (package.json,
// package-lock.json); `make test` installs its node_modules.
const everythingDir = "testdata/everything"

// teeDir names the variable that makes this test binary the recording
// wrapper of an upstream (runTee) instead of running tests.
const teeDir = "VIGIL_TEST_TEE"

// runTee runs argv as a child that shares this process's stdout and
// stderr, passes it each line of stdin and appends the line to
// dir/stdin.jsonl (what reached the upstream) and to dir/PID.jsonl (what
// reached this child, PID its pid), and exits as the child does: the upstream as the gateway sees it, and
// what the gateway sent it.
func runTee(dir string, argv []string) int {
	if len(argv) == 0 {
		fmt.Fprintln(os.Stderr, "tee: no command")
		return 2
	}
	rec, err := os.OpenFile(filepath.Join(dir, "stdin.jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tee:", err)
		return 2
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	in, err := cmd.StdinPipe()
	if err == nil {
		err = cmd.Start()
	}
	var own *os.File
	if err == nil {
		own, err = os.OpenFile(filepath.Join(dir, testkit.ProcessID(cmd.Process.Pid)+".jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "tee:", err)
		return 2
	}
	go func() {
		r := bufio.NewReader(os.Stdin)
		for {
			line, err := r.ReadBytes('\n')
			if len(line) > 0 {
				_, _ = rec.Write(line)
				_, _ = own.Write(line)
				_, _ = in.Write(line)
			}
			if err != nil {
				_ = in.Close()
				return
			}
		}
	}()
	if err := cmd.Wait(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() > 0 {
			return exit.ExitCode()
		}
		return 1
	}
	return 0
}

// everythingServer returns the pinned server-everything's entry point, or
// skips the test (fails it under CI=true) when node or the package is
// missing.
func everythingServer(t *testing.T) string {
	t.Helper()
	testkit.External(t, "node and @modelcontextprotocol/server-everything")
	if _, err := exec.LookPath("node"); err != nil {
		missingComponent(t, "node is not installed")
	}
	entry, err := filepath.Abs(filepath.Join(everythingDir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"))
	require.NoError(t, err)
	if _, err := os.Stat(entry); err != nil {
		missingComponent(t, "server-everything is not installed: run `make test` (npm ci --prefix cmd/vigil/"+everythingDir+")")
	}
	return entry
}

// peerMessage is one JSON-RPC message of a stdio peer.
type peerMessage struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// stdioPeer is the client side of an MCP server on a process's stdin and
// stdout: it answers the server's requests with answer and keeps the
// notifications it reads.
type stdioPeer struct {
	t      *testing.T
	in     io.Writer
	lines  chan []byte
	answer func(method string, params json.RawMessage) any
	notes  []peerMessage
}

// newStdioPeer reads out's lines in the background.
func newStdioPeer(t *testing.T, in io.Writer, out io.Reader, answer func(string, json.RawMessage) any) *stdioPeer {
	p := &stdioPeer{t: t, in: in, lines: make(chan []byte, 64), answer: answer}
	go func() {
		defer close(p.lines)
		r := bufio.NewReader(out)
		for {
			line, err := r.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				p.lines <- line
			}
			if err != nil {
				return
			}
		}
	}()
	return p
}

// endInput closes in, vigil's standard input, and waits, reading its
// output, until cmd exits: with status 0, within 30 s.
func (p *stdioPeer) endInput(in io.Closer, cmd *exec.Cmd) {
	p.t.Helper()
	require.NoError(p.t, in.Close())
	done := make(chan error, 1)
	go func() {
		for range p.lines { // drain stdout until vigil exits
		}
		done <- cmd.Wait()
	}()
	select {
	case err := <-done:
		require.NoError(p.t, err, "exit status 0 once stdin ends")
	case <-time.After(30 * time.Second):
		p.t.Fatal("vigil did not exit within 30s of stdin ending")
	}
}

// send writes one message.
func (p *stdioPeer) send(msg any) {
	p.t.Helper()
	b, err := json.Marshal(msg)
	require.NoError(p.t, err)
	_, err = p.in.Write(append(b, '\n'))
	require.NoError(p.t, err)
}

// request sends request id without waiting.
func (p *stdioPeer) request(id int, method string, params any) {
	p.t.Helper()
	msg := map[string]any{"jsonrpc": "2.0", "id": id, "method": method}
	if params != nil { // the TypeScript SDK drops a request whose params are null, unanswered
		msg["params"] = params
	}
	p.send(msg)
}

// next returns the next message that is not a request of the server's
// (those it answers), keeping notifications in p.notes; it fails the test
// after within.
func (p *stdioPeer) next(within time.Duration) peerMessage {
	p.t.Helper()
	timeout := time.After(within)
	for {
		select {
		case line, ok := <-p.lines:
			require.True(p.t, ok, "the server's stdout ended")
			var m peerMessage
			require.NoError(p.t, json.Unmarshal(line, &m), "%s", line)
			switch {
			case m.Method != "" && m.ID != nil:
				p.send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": p.answer(m.Method, m.Params)})
				continue
			case m.Method != "":
				p.notes = append(p.notes, m)
			}
			return m
		case <-timeout:
			p.t.Fatalf("nothing from the server within %v (notifications so far: %d)", within, len(p.notes))
		}
	}
}

// response waits for the response to id.
func (p *stdioPeer) response(id int) peerMessage {
	p.t.Helper()
	for {
		if m := p.next(time.Minute); m.Method == "" && string(m.ID) == strconv.Itoa(id) {
			return m
		}
	}
}

// call sends a request and returns its result, failing on an error.
func (p *stdioPeer) call(id int, method string, params any) json.RawMessage {
	p.t.Helper()
	p.request(id, method, params)
	m := p.response(id)
	require.Nil(p.t, m.Error, "%s %v: %+v", method, params, m.Error)
	return m.Result
}

// initialize opens the MCP session with caps, and returns the server's
// instructions.
func (p *stdioPeer) initialize(caps any) string {
	p.t.Helper()
	raw := p.call(0, "initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": caps, "clientInfo": map[string]string{"name": "vigil-test", "version": "1"}})
	p.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	var res struct {
		Instructions string `json:"instructions"`
	}
	require.NoError(p.t, json.Unmarshal(raw, &res))
	return res.Instructions
}

// everythingCaps are the client capabilities of TestGatewayEverything's
// client, which the gateway declares upstream for it (gateway.open).
var everythingCaps = map[string]any{"sampling": map[string]any{}, "elicitation": map[string]any{"form": map[string]any{}, "url": map[string]any{}}, "roots": map[string]any{}}

// answerAsClient answers server-everything's requests: roots, sampling and
// elicitation.
func answerAsClient(method string, _ json.RawMessage) any {
	switch method {
	case "roots/list":
		return map[string]any{"roots": []map[string]string{{"uri": "file:///srv/vigil-test-root", "name": "vigil-test-root"}}}
	case "sampling/createMessage":
		return map[string]any{"role": "assistant", "content": map[string]string{"type": "text", "text": "sampled by the test"}, "model": "test-model"}
	case "elicitation/create":
		return map[string]any{"action": "decline"}
	}
	return map[string]any{}
}

// listedNames returns the names (or URIs) of a list result's items,
// sorted.
func listedNames(t *testing.T, raw json.RawMessage, field, key string) []string {
	t.Helper()
	out := listedInOrder(t, raw, field, key)
	slices.Sort(out)
	return out
}

// listedInOrder returns the names (or URIs) of a list result's items, in
// the order listed.
func listedInOrder(t *testing.T, raw json.RawMessage, field, key string) []string {
	t.Helper()
	var res map[string][]map[string]any
	require.NoError(t, json.Unmarshal(raw, &res))
	var out []string
	for _, it := range res[field] {
		out = append(out, fmt.Sprint(it[key]))
	}
	return out
}

// everythingDirect lists what server-everything itself offers a client
// that declares caps: its instructions, tools (sorted, and in its order),
// prompts, resources and templates in its order, by name (resources by
// URI).
func everythingDirect(t *testing.T, entry string, caps any) map[string][]string {
	t.Helper()
	cmd := exec.Command("node", entry)
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer func() {
		_ = cmd.Process.Kill() // it would wait a minute for an answer to its roots/list before exiting
		_ = cmd.Wait()
	}()
	p := newStdioPeer(t, in, out, answerAsClient)
	instructions := p.initialize(caps)
	p.call(1, "ping", nil) // served after initialized: the tools registered by it are in
	return map[string][]string{
		"instructions": {instructions},
		"order":        listedInOrder(t, p.call(6, "tools/list", nil), "tools", "name"),
		"tools":        listedNames(t, p.call(2, "tools/list", nil), "tools", "name"),
		"prompts":      listedInOrder(t, p.call(3, "prompts/list", nil), "prompts", "name"),
		"resources":    listedInOrder(t, p.call(4, "resources/list", nil), "resources", "uri"),
		"templates":    listedInOrder(t, p.call(5, "resources/templates/list", nil), "resourceTemplates", "uriTemplate"),
	}
}

// everythingToolArgs are valid arguments, from each tool's schema, for
// every tool of server-everything 2026.8.31 (a tool missing here fails the
// test: pin a new version, then add it).
var everythingToolArgs = map[string]map[string]any{
	"echo":                   {"message": "hello through vigil"},
	"get-annotated-message":  {"messageType": "success", "includeImage": true},
	"get-env":                {},
	"get-resource-links":     {"count": 2},
	"get-resource-reference": {"resourceType": "Blob", "resourceId": 2},
	"get-roots-list":         {},
	"get-structured-content": {"location": "Chicago"},
	"get-sum":                {"a": 2, "b": 3},
	"get-tiny-image":         {},
	"gzip-file-as-resource":  {"name": "hello.txt.gz", "data": "data:text/plain;base64,aGVsbG8gdmlnaWw=", "outputType": "resource"},
	// toggled on here and off again after the loop
	"toggle-simulated-logging":       {},
	"toggle-subscriber-updates":      {},
	"trigger-long-running-operation": {"duration": 0.3, "steps": 3},
	"trigger-sampling-request":       {"prompt": "say something", "maxTokens": 20},
	"trigger-elicitation-request":    {},
	"trigger-url-elicitation":        {"url": "https://example.com/consent", "message": "open it"},
	"simulate-research-query":        {"topic": "gateways"},
}

// everythingToolWants is a piece of each tool's answer through the
// gateway that shows the call did what the tool does.
var everythingToolWants = map[string]string{
	"echo":                           "Echo: hello through vigil",
	"get-annotated-message":          `"type":"image"`,
	"get-env":                        "PATH",
	"get-resource-links":             `"type":"resource_link"`,
	"get-resource-reference":         `"type":"resource"`,
	"get-roots-list":                 "file:///srv/vigil-test-root",
	"get-structured-content":         `"structuredContent":{`,
	"get-sum":                        "5",
	"get-tiny-image":                 `"type":"image"`,
	"gzip-file-as-resource":          `"mimeType":"application/gzip"`,
	"trigger-sampling-request":       "sampled by the test",
	"trigger-elicitation-request":    "decline",
	"trigger-long-running-operation": "Long running operation completed",
}

// TestGatewayEverything fronts the real reference server
// @modelcontextprotocol/server-everything (pinned in testdata/everything)
// with vigil -stdio -upstream, through a wrapper that records what reaches
// the server's stdin: every tool, prompt, resource and template the server
// offers is listed through Vigil and usable (each tool called with valid
// arguments, its task-only tool as a task; the server's sampling,
// elicitation and roots requests reach this client and its answers go
// back); the long-running tool's progress
// is relayed in order before its result; a cancel reaches the server as
// notifications/cancelled and is recorded client_cancel; killing the
// server mid-call answers the call at once with an error naming the
// upstream, and the next call works.
func TestGatewayEverything(t *testing.T) {
	entry := everythingServer(t)
	direct := everythingDirect(t, entry, everythingCaps)
	t.Logf("server-everything offers %d tools, %d prompts, %d resources, %d templates",
		len(direct["tools"]), len(direct["prompts"]), len(direct["resources"]), len(direct["templates"]))

	self, err := os.Executable()
	require.NoError(t, err)
	rec := t.TempDir()
	var stderr lockedBuffer
	cmd := exec.Command(vigilBin, "-stdio", "-log-level", "debug", "-upstream", "everything="+self+" node "+entry, "-upstream-env", "everything="+teeDir+"="+rec, "-upstream-sandbox", "everything=none,write="+rec)
	cmd.Env = append(os.Environ(), "VIGIL_TEST_SECRET=not-for-upstreams")
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("vigil stderr:\n%s", stderr.String())
		}
	})
	p := newStdioPeer(t, in, out, answerAsClient)
	instructions := p.initialize(everythingCaps)
	require.NotEmpty(t, direct["instructions"][0], "server-everything gives instructions")
	assert.Equal(t, direct["instructions"][0], instructions, "the upstream's instructions, as it sent them")

	// Listed: the server's conditional tools arrive after its initialize
	// (tools/list_changed), so the gateway's list may trail it briefly.
	id := 10
	var tools []string
	svcEventually(t, "the gateway lists the server's tools", 30*time.Second, func() (bool, error) {
		id++
		tools = listedNames(t, p.call(id, "tools/list", nil), "tools", "name")
		return slices.Equal(tools, direct["tools"]), nil
	})
	require.Equal(t, direct["tools"], tools, "every tool the server shows a client with these capabilities, under its own name")
	assert.Equal(t, direct["order"], listedInOrder(t, p.call(19, "tools/list", nil), "tools", "name"), "in the server's order")
	assert.Contains(t, tools, "trigger-url-elicitation", "shown to a client that declares URL elicitation")
	// Prompts, resources and templates: each in the server's order too.
	assert.Equal(t, direct["prompts"], listedInOrder(t, p.call(20, "prompts/list", nil), "prompts", "name"), "prompts in the server's order")
	assert.Equal(t, direct["resources"], listedInOrder(t, p.call(21, "resources/list", nil), "resources", "uri"), "resources in the server's order")
	assert.Equal(t, direct["templates"], listedInOrder(t, p.call(22, "resources/templates/list", nil), "resourceTemplates", "uriTemplate"), "templates in the server's order")

	// Usable: every tool.
	id = 100
	var gzipped json.RawMessage // gzip-file-as-resource's result
	for _, name := range tools {
		args, ok := everythingToolArgs[name]
		require.True(t, ok, "no arguments for server-everything's tool %s: add them", name)
		id++
		if name == "simulate-research-query" { // it runs only as a task
			p.request(id, "tools/call", map[string]any{"name": name, "arguments": args})
			require.NotNil(t, p.response(id).Error, "a task-only tool is refused as a plain call")
			id++
			created := p.call(id, "tools/call", map[string]any{"name": name, "arguments": args, "task": map[string]any{}})
			var task struct{ Task struct{ TaskID string } }
			require.NoError(t, json.Unmarshal(created, &task), "%s", created)
			require.NotEmpty(t, task.Task.TaskID, "%s", created)
			id++
			res := p.call(id, "tasks/result", map[string]string{"taskId": task.Task.TaskID})
			assert.Contains(t, string(res), "gateways", "the research's result, through the upstream's own task")
			continue
		}
		p.request(id, "tools/call", map[string]any{"name": name, "arguments": args})
		m := p.response(id)
		require.Nil(t, m.Error, "%s: %+v", name, m.Error)
		assert.NotContains(t, string(m.Result), `"isError":true`, "%s: %s", name, m.Result)
		if want, ok := everythingToolWants[name]; ok {
			assert.Contains(t, string(m.Result), want, "%s", name)
		}
		if name == "get-env" {
			assert.NotContains(t, string(m.Result), "VIGIL_TEST_SECRET", "the upstream inherits none of vigil's own variables")
		}
		if name == "gzip-file-as-resource" {
			gzipped = m.Result
		}
	}
	// The resource gzip-file-as-resource made in the caller's session,
	// which only that session's process serves, read back.
	var made struct {
		Content []struct{ Resource struct{ URI, Blob string } }
	}
	require.NoError(t, json.Unmarshal(gzipped, &made))
	require.Len(t, made.Content, 1, "%s", gzipped)
	read := p.call(202, "resources/read", map[string]string{"uri": made.Content[0].Resource.URI})
	assert.Contains(t, string(read), made.Content[0].Resource.Blob, "the session's resource, read back")
	p.call(200, "tools/call", map[string]any{"name": "toggle-simulated-logging", "arguments": map[string]any{}})
	p.call(201, "tools/call", map[string]any{"name": "toggle-subscriber-updates", "arguments": map[string]any{}})
	// Every prompt, resource and template.
	promptArgs := map[string]map[string]string{
		"args-prompt":        {"city": "Lyon", "state": "Rhône"},
		"completable-prompt": {"department": "Engineering", "name": "Alice"},
		"resource-prompt":    {"resourceType": "Text", "resourceId": "1"},
		"simple-prompt":      {},
	}
	for i, name := range direct["prompts"] {
		args, ok := promptArgs[name]
		require.True(t, ok, "no arguments for server-everything's prompt %s: add them", name)
		res := p.call(300+i, "prompts/get", map[string]any{"name": name, "arguments": args})
		assert.Contains(t, string(res), `"messages":[{`, name)
	}
	for i, uri := range direct["resources"] {
		assert.Contains(t, string(p.call(400+i, "resources/read", map[string]string{"uri": uri})), `"contents":[{`, uri)
	}
	for i, tmpl := range direct["templates"] {
		uri := strings.Replace(tmpl, "{resourceId}", "7", 1)
		assert.Contains(t, string(p.call(500+i, "resources/read", map[string]string{"uri": uri})), `"uri":"`+uri+`"`, uri)
	}

	// Progress relayed, in order, before the result.
	p.notes = nil
	res := p.call(600, "tools/call", map[string]any{
		"name": "trigger-long-running-operation", "arguments": map[string]any{"duration": 0.3, "steps": 3},
		"_meta": map[string]any{"progressToken": "p600"},
	})
	assert.Contains(t, string(res), "Long running operation completed")
	var progress []string
	for _, n := range p.notes {
		if n.Method == "notifications/progress" {
			var pr struct {
				Token    any     `json:"progressToken"`
				Progress float64 `json:"progress"`
				Total    float64 `json:"total"`
			}
			require.NoError(t, json.Unmarshal(n.Params, &pr))
			progress = append(progress, fmt.Sprintf("%v %v/%v", pr.Token, pr.Progress, pr.Total))
		}
	}
	assert.Equal(t, []string{"p600 1/3", "p600 2/3", "p600 3/3"}, progress)

	// A cancel reaches the server.
	p.request(700, "tools/call", map[string]any{
		"name": "trigger-long-running-operation", "arguments": map[string]any{"duration": 60, "steps": 60},
		"_meta": map[string]any{"progressToken": "p700"},
	})
	waitProgress(t, p, "p700")
	p.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": map[string]any{"requestId": 700, "reason": "the test cancels"}})
	svcEventually(t, "notifications/cancelled reaches the upstream", 10*time.Second, func() (bool, error) {
		return cancelledUpstream(rec, "trigger-long-running-operation")
	})

	// Killing the server mid-call answers the call at once, with an error
	// naming the upstream; the next call starts it again.
	p.request(800, "tools/call", map[string]any{
		"name": "trigger-long-running-operation", "arguments": map[string]any{"duration": 60, "steps": 60},
		"_meta": map[string]any{"progressToken": "p800"},
	})
	waitProgress(t, p, "p800")
	// The session's process is the one the call reached: not the listing
	// session's, a tool view's or the spare vigil keeps for the next one.
	n := processWith(t, rec, `"progressToken":"p800"`)
	killed := time.Now()
	require.NoError(t, syscall.Kill(n, syscall.SIGKILL))
	m := p.response(800)
	took := time.Since(killed)
	require.NotNil(t, m.Error, "the call in flight fails: %s", m.Result)
	assert.Equal(t, "upstream everything is gone", m.Error.Message)
	assert.Less(t, took, 5*time.Second, "answered at once, not after the call's 60 s")
	t.Logf("the call in flight was answered %v after the kill: %d %s", took, m.Error.Code, m.Error.Message)
	assert.Contains(t, string(p.call(801, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"message": "again"}})), "Echo: again")

	p.endInput(in, cmd)
	logs := stderr.String()
	assert.Regexp(t, `msg=request method=tools/call tool=trigger-long-running-operation request_id=700 .*outcome=cancelled cause=client_cancel`, logs)
	assert.Regexp(t, `msg=request method=tools/call tool=trigger-long-running-operation request_id=800 .*outcome=error code=-32603 .*cause=upstream_closed`, logs)
}

// waitProgress reads until a progress notification of token arrives.
func waitProgress(t *testing.T, p *stdioPeer, token string) {
	t.Helper()
	for {
		if m := p.next(time.Minute); m.Method == "notifications/progress" && strings.Contains(string(m.Params), `"progressToken":"`+token+`"`) {
			return
		}
	}
}

// cancelledUpstream reports whether the upstream's recorded stdin holds a
// notifications/cancelled of a tools/call of tool.
func cancelledUpstream(rec, tool string) (bool, error) {
	b, err := os.ReadFile(filepath.Join(rec, "stdin.jsonl"))
	if err != nil {
		return false, err
	}
	var ids []string
	var cancelled []string
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name      string          `json:"name"`
				RequestID json.RawMessage `json:"requestId"`
			} `json:"params"`
		}
		if json.Unmarshal(line, &m) != nil {
			continue
		}
		switch {
		case m.Method == "tools/call" && m.Params.Name == tool:
			ids = append(ids, string(m.ID))
		case m.Method == "notifications/cancelled":
			cancelled = append(cancelled, string(m.Params.RequestID))
		}
	}
	for _, id := range cancelled {
		if slices.Contains(ids, id) {
			return true, nil
		}
	}
	return false, fmt.Errorf("calls %v, cancelled %v", ids, cancelled)
}
