package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/testkit/issuertest"
	"github.com/vigil-mcp/vigil/internal/testkit/redistest"
)

// TestSharedRedisLearnsNothing runs the shipped vigil as three replicas
// with -redis, JWT authorization, the session quota and shared rate
// limits: a session opened on one, a confirm_action called on another and
// its elicitation answered, with a secret note, on the third. Then every
// key Redis holds (SCAN), every member and value of each, and every
// message published meanwhile (PSUBSCRIBE *) are read as someone with
// read-only access to Redis reads them: none holds the session id, the
// subject, the client id, the token or what the user wrote.
func TestSharedRedisLearnsNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("three replicas: skipped with -short")
	}
	rs := redistest.Start(t)
	rdb := rs.Client(t)
	as := issuertest.Start(t)
	const resource = "http://mcp.example.test/mcp"

	ps := rdb.PSubscribe(t.Context(), "*")
	t.Cleanup(func() { _ = ps.Close() })
	_, err := ps.Receive(t.Context()) // subscribed
	require.NoError(t, err)
	published := ps.Channel(redis.WithChannelSize(10_000))

	var replicas []fwReplica
	for range 3 {
		replicas = append(replicas, startFWReplica(t, "127.0.0.1", rs.URL(), resource, as, "-allowed-hosts", "mcp.example.test", "-rate-limit", "1000", "-quota-sessions", "5"))
	}
	a, b, c := replicas[0], replicas[1], replicas[2]
	const subject, note, action = "alice.lovelace@example.test", "USER-SECRET-NOTE-4711", "LAUNCH-ACTION-0815"
	token := as.Token(t, resource, subject, "vigil.read", "vigil.write")

	init := fwPost(t, a.url, token, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"ln","version":"1"}}}`, nil)
	require.Equal(t, http.StatusOK, init.status, init.body)
	sid := init.sid
	require.NotEmpty(t, sid)
	session := map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}
	ack := fwPost(t, b.url, token, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, session)
	require.Equal(t, http.StatusAccepted, ack.status, ack.body)

	// confirm_action on b, its elicitation answered on c with the note.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.url, strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"confirm_action","arguments":{"action":"`+action+`"}}}`))
	require.NoError(t, err)
	req.Host = "mcp.example.test"
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	for k, v := range session {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	events := bufio.NewScanner(resp.Body)
	next := func() map[string]json.RawMessage {
		t.Helper()
		for events.Scan() {
			if d, ok := strings.CutPrefix(events.Text(), "data:"); ok && strings.TrimSpace(d) != "" {
				var m map[string]json.RawMessage
				require.NoError(t, json.Unmarshal([]byte(d), &m), "%s", d)
				return m
			}
		}
		t.Fatalf("the stream ended: %v", events.Err())
		return nil
	}
	ask := next()
	require.JSONEq(t, `"elicitation/create"`, string(ask["method"]))
	answer := fwPost(t, c.url, token, `{"jsonrpc":"2.0","id":`+string(ask["id"])+`,"result":{"action":"accept","content":{"confirm":true,"note":"`+note+`"}}}`, session)
	require.Equal(t, http.StatusAccepted, answer.status, answer.body)
	final := next()
	require.Contains(t, string(final["result"]), note, "the answer, posted to c, reached the tool on b through Redis")

	// Every message so far, up to a marker published after them.
	const end = "end of the scan"
	require.NoError(t, rdb.Publish(t.Context(), "test-marker", end).Err())
	secrets := []string{sid, subject, issuertest.ClientID, token, note, action}
	messages := 0
	for m := range published {
		if m.Channel == "test-marker" && m.Payload == end {
			break
		}
		messages++
		for _, s := range secrets {
			assert.NotContains(t, m.Channel, s, "a channel")
			assert.NotContains(t, m.Payload, s, "a message on %s", m.Channel)
		}
	}
	assert.Positive(t, messages, "the replicas relayed through Redis")

	// Every key, and what each holds.
	var keys []string
	iter := rdb.Scan(t.Context(), 0, "*", 100).Iterator()
	for iter.Next(t.Context()) {
		keys = append(keys, iter.Val())
	}
	require.NoError(t, iter.Err())
	kinds := map[string]int{}
	for _, k := range keys {
		kind := rdb.Type(t.Context(), k).Val()
		kinds[kind]++
		var held []string
		switch kind {
		case "string":
			held = []string{rdb.Get(t.Context(), k).Val()}
		case "hash":
			for f, v := range rdb.HGetAll(t.Context(), k).Val() {
				held = append(held, f, v)
			}
		case "set":
			held = rdb.SMembers(t.Context(), k).Val()
		case "zset":
			held = rdb.ZRange(t.Context(), k, 0, -1).Val()
		case "stream":
			for _, e := range rdb.XRange(t.Context(), k, "-", "+").Val() {
				for f, v := range e.Values {
					held = append(held, f, v.(string))
				}
			}
		case "list":
			held = rdb.LRange(t.Context(), k, 0, -1).Val()
		}
		for _, s := range secrets {
			assert.NotContains(t, k, s, "a key")
			for _, v := range held {
				assert.NotContains(t, v, s, "in %s (%s)", k, kind)
			}
		}
	}
	for _, kind := range []string{"hash", "zset", "stream", "string"} {
		assert.Positive(t, kinds[kind], "Redis holds a %s: the session, its quota, its events, the leases and rate limits (%v)", kind, keys)
	}
}
