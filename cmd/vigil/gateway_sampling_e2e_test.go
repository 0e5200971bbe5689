package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGatewayTwoUpstreamsSampling: vigil in front of two upstreams, a
// (vigil-everything -stdio) and b (vigil -stdio), serves their tools under
// the prefixes a_ and b_; three clients call at once, two of them a's
// sampling tool and one b's confirm_action, which elicits; each client
// gets the request of its own call, with its own prompt, on its own
// call's stream, and no other's: all three requests are out before any is
// answered, and each call's result holds its own client's answer.
func TestGatewayTwoUpstreamsSampling(t *testing.T) {
	everything := filepath.Join(t.TempDir(), "vigil-everything")
	out, err := exec.CommandContext(t.Context(), "go", "build", "-o", everything, "../vigil-everything").CombinedOutput()
	require.NoError(t, err, "%s", out)
	svc := startService(t, "-http", "127.0.0.1:0", "-upstream", "a="+everything+" -stdio", "-upstream", "b="+vigilBin+" -stdio")
	hc := &http.Client{Timeout: 30 * time.Second}
	defer hc.CloseIdleConnections()

	list := &svcClient{hc: hc, url: svc.base + "/mcp"}
	m, err := list.rpc("1", "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`)
	require.NoError(t, err)
	require.Nil(t, m.Error)
	require.NoError(t, list.notify("notifications/initialized"))
	m, err = list.rpc("2", "tools/list", `{}`)
	require.NoError(t, err)
	require.Nil(t, m.Error)
	for _, name := range []string{"a_test_sampling", "a_test_simple_text", "b_echo", "b_confirm_action"} {
		assert.Contains(t, string(m.Result), `"name":"`+name+`"`)
	}
	assert.NotContains(t, string(m.Result), `"name":"test_sampling"`, "with two upstreams every tool is prefixed")

	callers := []struct{ name, tool, arg string }{{"x", "a_test_sampling", "prompt"}, {"y", "b_confirm_action", "action"}, {"z", "a_test_sampling", "prompt"}}
	asked := make(chan string, len(callers)) // each caller's prompt, as its sampling request carried it
	answer := make(chan struct{})            // closed when every caller was asked
	results := make([]string, len(callers))
	errs := make([]error, len(callers))
	var wg sync.WaitGroup
	for i, caller := range callers {
		c := &svcClient{hc: hc, url: svc.base + "/mcp"}
		m, err := c.rpc("1", "initialize", `{"protocolVersion":"2025-11-25","capabilities":{"sampling":{},"elicitation":{}},"clientInfo":{"name":"`+caller.name+`","version":"1"}}`)
		require.NoError(t, err)
		require.Nil(t, m.Error)
		require.NoError(t, c.notify("notifications/initialized"))
		wg.Go(func() {
			results[i], errs[i] = askedThroughGateway(c, caller.tool, caller.arg, "prompt of "+caller.name, "answer of "+caller.name, asked, answer)
		})
	}
	var prompts []string
	for range callers {
		select {
		case p := <-asked:
			prompts = append(prompts, p)
		case <-time.After(20 * time.Second):
			close(answer)
			wg.Wait()
			require.FailNow(t, "not every caller was asked", "asked: %v, errors: %v", prompts, errs)
		}
	}
	close(answer)
	wg.Wait()
	assert.ElementsMatch(t, []string{
		"sampling/createMessage: prompt of x", "elicitation/create: Do you want to allow this action? prompt of y",
		"sampling/createMessage: prompt of z",
	}, prompts)
	for i, want := range []string{"LLM response: answer of x", `"note":"answer of y"`, "LLM response: answer of z"} {
		require.NoError(t, errs[i], callers[i].name)
		assert.Contains(t, results[i], want, callers[i].name)
	}
}

// askedThroughGateway calls tool with {arg: prompt} in c's session and
// reads its stream: a sampling or elicitation request must come first on
// it, carrying prompt (sent to asked as "method: text", which the caller
// checks); once answer is closed, it answers the request with reply (the
// sampled text, or the elicited form's note) and returns the call's
// result.
func askedThroughGateway(c *svcClient, tool, arg, prompt, reply string, asked chan<- string, answer <-chan struct{}) (string, error) {
	resp, err := c.post(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"` + tool + `","arguments":{"` + arg + `":"` + prompt + `"}}}`)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return "", fmt.Errorf("tools/call: %s, %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data:")
		if !ok {
			continue
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Message  string `json:"message"`
				Messages []struct {
					Content struct{ Text string } `json:"content"`
				} `json:"messages"`
			} `json:"params"`
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal([]byte(strings.TrimSpace(data)), &msg); err != nil {
			return "", err
		}
		var result string
		switch msg.Method {
		case "sampling/createMessage":
			text := ""
			if len(msg.Params.Messages) == 1 {
				text = msg.Params.Messages[0].Content.Text
			}
			asked <- msg.Method + ": " + text
			result = `{"role":"assistant","content":{"type":"text","text":"` + reply + `"},"model":"test"}`
		case "elicitation/create":
			asked <- msg.Method + ": " + msg.Params.Message
			result = `{"action":"accept","content":{"confirm":true,"note":"` + reply + `"}}`
		case "":
			if string(msg.ID) == "7" {
				return string(msg.Result), nil
			}
			continue
		default:
			continue
		}
		<-answer
		r, err := c.post(`{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"result":` + result + `}`)
		if err != nil {
			return "", err
		}
		_ = r.Body.Close()
		if r.StatusCode != http.StatusAccepted {
			return "", fmt.Errorf("the answer to %s: %s", msg.Method, r.Status)
		}
	}
	return "", errors.Join(errors.New("the stream ended without the result"), sc.Err())
}
