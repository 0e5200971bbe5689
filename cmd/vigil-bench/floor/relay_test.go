package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeStdioEnv makes the test binary a server over stdio instead of
// running the tests (TestMain): it answers every request with its own
// method and id in the text, each answer after a notification and a
// request of its own, as a server's log messages and sampling come
// between answers.
const fakeStdioEnv = "VIGIL_FLOOR_FAKE_STDIO"

func fakeStdioServer() {
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(in.Bytes(), &msg) != nil || msg.ID == nil {
			continue
		}
		fmt.Printf(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"before %s"}}`+"\n", msg.ID)
		fmt.Printf(`{"jsonrpc":"2.0","id":%s,"method":"sampling/createMessage","params":{}}`+"\n", msg.ID)
		text, _ := json.Marshal(msg.Method + " " + string(msg.ID)) // a string always encodes
		fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":%s}]}}`+"\n", msg.ID, text)
	}
}

// TestRelayAnswersWithTheServersAnswer: with -relay, the floor answers
// initialize and notifications itself and a tools/call with the line of
// the server's that answers its id, passing over the server's
// notifications and requests; once the server is gone, a call is 502.
func TestRelayAnswersWithTheServersAnswer(t *testing.T) {
	t.Setenv(fakeStdioEnv, "1")
	self, err := os.Executable()
	require.NoError(t, err)
	r, err := startRelay(self)
	require.NoError(t, err)
	f := newFloor()
	f.relay = r
	srv := httptest.NewServer(f)
	defer srv.Close()
	postBody := func(body string) (int, string) {
		resp, err := srv.Client().Post(srv.URL+"/mcp", "application/json", strings.NewReader(body))
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	code, body := postBody(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`)
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, `"serverInfo":{"name":"vigil"`, "the floor's own answer")
	code, _ = postBody(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	assert.Equal(t, http.StatusAccepted, code)
	for _, id := range []string{"2", `"three"`} {
		code, body = postBody(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"any","arguments":{}}}`)
		require.Equal(t, http.StatusOK, code, body)
		assert.JSONEq(t, `{"jsonrpc":"2.0","id":`+id+`,"result":{"content":[{"type":"text","text":"tools/call `+strings.ReplaceAll(id, `"`, `\"`)+`"}]}}`, body)
	}
	r.close()
	code, body = postBody(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"any","arguments":{}}}`)
	assert.Equal(t, http.StatusBadGateway, code, body)
}
