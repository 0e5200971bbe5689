package server

import (
	"encoding/json"
	"maps"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/transport"
)

// TestDecorateFastMatchesSlow checks that decorate's fast path writes what
// the map round trip writes, byte for byte, and that it leaves to the map
// round trip what it cannot.
func TestDecorateFastMatchesSlow(t *testing.T) {
	e := &statelessEra{srv: New(WithImplementation("t<&>", "1.0\u2028"))}
	results := []string{
		`{"content":[{"type":"text","text":"hi"}]}`,
		`{"content":[{"type":"text","text":"a<b>&c \u2028 \u2029 \" \\ é"}],"isError":true}`,
		`{"content":[],"structuredContent":{"z":1,"a":[1,2,{"k":"v"}]}}`,
		`{"resultType":"input_required","x":1}`,
		`{"resultType":"complete","ttlMs":5}`,
		`{"cacheScope":"public","b":null,"a":true}`,
		`{"a":1,"a":2}`,
		`{}`,
		`{"_meta":{"x":1},"a":1}`,
		`{"a b":1, "c":2}`,
		`{"a\u003c":1}`,
		`null`,
		`[1,2]`,
	}
	for _, method := range []string{"tools/call", "resources/read", "tools/list"} {
		for _, r := range results {
			slow, serr := e.decorateSlow(method, json.RawMessage(r))
			got, gerr := e.decorate(method, json.RawMessage(r))
			if string(got) != string(slow) || (gerr == nil) != (serr == nil) {
				t.Errorf("%s %s:\n got %s (%v)\nwant %s (%v)", method, r, got, gerr, slow, serr)
			}
		}
	}
	for _, r := range []string{results[0], results[1], results[2], `{"a":1,"a":2}`, `{}`} {
		if _, ok := e.decorateFast("tools/call", json.RawMessage(r)); !ok {
			t.Errorf("the fast path left %s to the map round trip", r)
		}
	}
	if _, ok := e.decorateFast("tools/call", json.RawMessage(`{"_meta":{},"a":1}`)); ok {
		t.Error("the fast path took a result with _meta of its own")
	}
	if _, ok := e.decorateFast("tools/call", json.RawMessage(`{"a": 1}`)); ok {
		t.Error("the fast path took a result that is not compact")
	}
}

// TestAppendToolResultMatchesDecorate checks that a tools/call result
// encoded and decorated in one pass is byte for byte what appendJSON and
// decorate write, and that the one pass leaves to them what it cannot do.
func TestAppendToolResultMatchesDecorate(t *testing.T) {
	e := &statelessEra{srv: New(WithImplementation("t<&>", "1.0\u2028"))}
	prio := 0.5
	covered := map[string]*CallToolResult{
		"text":         Text("hello"),
		"escapes":      Text("a<b>&c \u2028 \u2029 \" \\ é \xff\n\t"),
		"several":      {Content: []Content{&TextContent{Text: "a"}, &TextContent{Text: "<b>"}}},
		"empty":        {Content: []Content{}},
		"nil content":  {},
		"error":        {Content: []Content{&TextContent{Text: "boom"}}, IsError: true},
		"structured":   {Content: []Content{&TextContent{Text: `{"a":1}`}}, StructuredContent: map[string]any{"z": "<&>", "a": []any{1, json.RawMessage(`{ "k" : 2 }`)}}},
		"struct value": {StructuredContent: struct{ B, A string }{"x\u2029", "y"}},
	}
	for name, r := range covered {
		t.Run(name, func(t *testing.T) {
			raw, err := r.appendJSON(nil)
			require.NoError(t, err)
			want, err := e.decorate("tools/call", raw)
			require.NoError(t, err)
			got, ok := e.appendToolResult(r)
			require.True(t, ok, "left to appendJSON and decorate")
			assert.Equal(t, string(want), string(got))
		})
	}
	left := map[string]*CallToolResult{
		"meta":        {Content: []Content{&TextContent{Text: "a"}}, Meta: Meta{"k": 1}},
		"annotated":   {Content: []Content{&TextContent{Text: "x", Annotations: &Annotations{Priority: &prio}}}},
		"item meta":   {Content: []Content{&TextContent{Text: "x", Meta: Meta{"k": 1}}}},
		"image":       {Content: []Content{&ImageContent{Data: []byte{1}, MIMEType: "image/png"}}},
		"unencodable": {StructuredContent: func() {}},
	}
	for name, r := range left {
		if _, ok := e.appendToolResult(r); ok {
			t.Errorf("%s: taken by the one pass", name)
		}
	}
	if _, ok := (&statelessEra{srv: &Server{}}).appendToolResult(Text("x")); ok {
		t.Error("taken without the server's info")
	}
}

// TestPlainRound checks that readRound skips only params in which
// encoding/json could find neither inputResponses nor requestState as a
// member of its own.
func TestPlainRound(t *testing.T) {
	for params, want := range map[string]bool{
		`{"name":"echo","arguments":{"text":"hi"}}`:       true,
		`{"name":"echo","requestState":"x"}`:              false,
		`{"name":"echo","REQUESTSTATE":"x"}`:              false,
		`{"name":"echo","inputResponses":{}}`:             false,
		`{"name":"echo","InputResponses":null}`:           false,
		`{"name":"echo","\u0072equestState":"x"}`:         false,
		"{\"name\":\"echo\",\"inputResponse\u017f\":{}}":  false,
		"{\"name\":\"echo\",\"inputResponse\\u017f\":{}}": false,
		`{"arguments":{"text":"requeststate is a word"}}`: true, // a value, not a member
		`{"arguments":{"requestState":"x"}}`:              true, // not params' own
		`{"name":"echo","requestStates":"x"}`:             true,
		`[]`:                                              false,
		``:                                                false,
	} {
		if got := plainRound([]byte(params)); got != want {
			t.Errorf("plainRound(%s) = %v, want %v", params, got, want)
		}
		// What readRound would decode agrees.
		var p struct {
			InputResponses json.RawMessage `json:"inputResponses"`
			RequestState   json.RawMessage `json:"requestState"`
		}
		if err := json.Unmarshal([]byte(params), &p); err == nil && params[0] == '{' {
			if found := p.InputResponses != nil || p.RequestState != nil; found == want {
				t.Errorf("plainRound(%s) = %v, but encoding/json finds a member: %v", params, want, found)
			}
		}
	}
}

// readMeta reads _meta as json.Unmarshal into a map would, and its values
// cannot be appended to in place (they alias the message); from the
// members the decoder kept (DecodeOwnedMessage, up to four) and from
// _meta itself (DecodeMessage, or more members) alike.
func TestReadMetaMatchesUnmarshal(t *testing.T) {
	decoders := map[string]func([]byte) (transport.Message, error){
		"owned": transport.DecodeOwnedMessage, "copied": transport.DecodeMessage,
	}
	request := func(t *testing.T, decode func([]byte) (transport.Message, error), meta string) *transport.Request {
		t.Helper()
		msg, err := decode([]byte(`{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":` + meta + `}}`))
		require.NoError(t, err, meta)
		return msg.(*transport.Request)
	}
	for name, decode := range decoders {
		for _, raw := range []string{
			`{}`,
			` { } `,
			`{"progressToken":1,"traceparent":"00-x","io.modelcontextprotocol/protocolVersion":"2026-07-28"}`,
			`{"io.modelcontextprotocol/clientCapabilities":{"a":[1,{"b":"}"}]},"other":null}`,
			`{"k":1,"k":2}`,
			`{"\u0074raceparent":"esc","x\"y":true}`,
			`{"a":1,"b":2,"c":3,"d":4,"e":5,"a":6}`,
		} {
			var want map[string]json.RawMessage
			require.NoError(t, json.Unmarshal([]byte(raw), &want), raw)
			var meta RequestMeta
			require.True(t, readMeta(request(t, decode, raw), &meta), "%s %s", name, raw)
			got := maps.Collect(meta.All())
			if len(want) == 0 {
				want = nil // maps.Collect of no members
				got = nil
			}
			require.Equal(t, want, got, "%s %s", name, raw)
			assert.Equal(t, len(want), meta.Len(), "%s %s", name, raw)
			for k, v := range got {
				assert.Equal(t, len(v), cap(v), "value of %q has spare capacity", k)
				g, ok := meta.Get(k)
				assert.True(t, ok, "%s %s: Get(%q)", name, raw, k)
				assert.Equal(t, v, g, "%s %s: Get(%q)", name, raw, k)
			}
			_, ok := meta.Get("absent")
			assert.False(t, ok)
		}
		for _, raw := range []string{`"s"`, `[1]`, `1`} {
			var meta RequestMeta
			assert.False(t, readMeta(request(t, decode, raw), &meta), "%s %s", name, raw)
		}
	}
}
