package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/internal/vocab"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// featureCall sends a request and returns its result.
func (h *harness) featureCall(id int64, method string, params any) json.RawMessage {
	h.Request(id, method, params)
	return h.RecvResult(id)
}

// featureError sends a request and returns the error it is answered with.
func (h *harness) featureError(id int64, method string, params any) *transport.Error {
	h.Request(id, method, params)
	resp := h.RecvResponse()
	require.Equal(h.t, transport.Int64ID(id), resp.ID)
	require.NotNil(h.t, resp.Error, "want an error, got %s", resp.Result)
	return resp.Error
}

// expectNothingPending proves that nothing was queued for the client: the
// next message is the answer to a ping sent now.
func (h *harness) expectNothingPending(id int64) {
	h.t.Helper()
	synctest.Wait()
	h.Request(id, "ping", nil)
	m := h.Recv()
	resp, ok := m.(*transport.Response)
	require.True(h.t, ok, "want the ping's answer, got %#v", m)
	require.Equal(h.t, transport.Int64ID(id), resp.ID)
}

// finish closes the client and waits for Serve.
func (h *harness) finish() {
	require.NoError(h.t, h.Close())
	require.NoError(h.t, h.Wait())
}

func textContents(text string) *server.ReadResourceResult {
	return &server.ReadResourceResult{Contents: []*server.ResourceContents{{MIMEType: "text/plain", Text: text}}}
}

// addResources registers the resources the tests read.
func addResources(t testing.TB, srv *server.Server) {
	prio := 0.5
	size := int64(3)
	require.NoError(t, srv.AddResource(server.Resource{
		URI: "test://static-text", Name: "static-text", Title: "Static Text", Description: "A text resource.",
		MIMEType: "text/plain", Icons: []server.Icon{{Src: "https://example.com/i.png", MIMEType: "image/png"}},
		Annotations: &server.Annotations{Audience: []string{"user"}, Priority: &prio}, Meta: server.Meta{"k": "v"},
	}, func(context.Context, *server.ReadResourceRequest) (*server.ReadResourceResult, error) {
		return textContents("hello"), nil // the URI is filled in by the server
	}))
	require.NoError(t, srv.AddResource(server.Resource{URI: "test://static-binary", Name: "static-binary", MIMEType: "image/png", Size: &size},
		func(_ context.Context, req *server.ReadResourceRequest) (*server.ReadResourceResult, error) {
			return &server.ReadResourceResult{Contents: []*server.ResourceContents{{URI: req.URI, MIMEType: "image/png", Blob: []byte{1, 2, 3}}}}, nil
		}))
	echo := func(_ context.Context, req *server.ReadResourceRequest) (*server.ReadResourceResult, error) {
		b, err := json.Marshal(map[string]any{"template": req.Template, "vars": req.Variables})
		if err != nil {
			return nil, err
		}
		return &server.ReadResourceResult{Contents: []*server.ResourceContents{{URI: req.URI, MIMEType: "application/json", Text: string(b)}}}, nil
	}
	require.NoError(t, srv.AddResourceTemplate(server.ResourceTemplate{
		URITemplate: "test://items/{id}/data{?fields}", Name: "item", Title: "Item", Description: "An item.", MIMEType: "application/json",
	}, echo))
	require.NoError(t, srv.AddResourceTemplate(server.ResourceTemplate{URITemplate: "test://{name}", Name: "any"}, echo))
	require.NoError(t, srv.AddResourceTemplate(server.ResourceTemplate{URITemplate: "list://{/segs*}", Name: "segments"}, echo))
	require.NoError(t, srv.AddResourceTemplate(server.ResourceTemplate{URITemplate: "test://errors/{kind}", Name: "errors"},
		func(_ context.Context, req *server.ReadResourceRequest) (*server.ReadResourceResult, error) {
			switch req.Variables["kind"] {
			case "missing":
				return nil, fmt.Errorf("no such row: %w", server.ErrResourceNotFound)
			case "protocol":
				return nil, server.Errorf(protocol.CodeInvalidParams, "bad kind")
			case "internal":
				return nil, errors.New("secret detail")
			case "nil-result":
				return nil, nil
			case "nil-entry":
				return &server.ReadResourceResult{Contents: []*server.ResourceContents{nil}}, nil
			case "two":
				return &server.ReadResourceResult{Contents: []*server.ResourceContents{
					{URI: req.URI + "/a", Text: "a"}, {URI: req.URI + "/b", Blob: []byte{}},
				}, Meta: server.Meta{"m": 1}}, nil
			}
			return textContents(req.Variables["kind"]), nil
		}))
}

// resourceHarness starts an initialized session on a server with the test
// resources.
func resourceHarness(t *testing.T, opts ...server.Option) *harness {
	h := newHarness(t, opts...)
	addResources(t, h.srv)
	h.start()
	h.Initialize(protocol.Version20251125, nil)
	return h
}

func TestResourcesList(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := resourceHarness(t)
		// Each in the order registered (addResources), not by URI.
		assert.JSONEq(t, `{"resources":[
			{"uri":"test://static-text","name":"static-text","title":"Static Text","description":"A text resource.","mimeType":"text/plain",
			 "icons":[{"src":"https://example.com/i.png","mimeType":"image/png"}],"annotations":{"audience":["user"],"priority":0.5},"_meta":{"k":"v"}},
			{"uri":"test://static-binary","name":"static-binary","mimeType":"image/png","size":3}
		]}`, string(h.featureCall(2, "resources/list", nil)))
		assert.JSONEq(t, `{"resourceTemplates":[
			{"uriTemplate":"test://items/{id}/data{?fields}","name":"item","title":"Item","description":"An item.","mimeType":"application/json"},
			{"uriTemplate":"test://{name}","name":"any"},
			{"uriTemplate":"list://{/segs*}","name":"segments"},
			{"uriTemplate":"test://errors/{kind}","name":"errors"}
		]}`, string(h.featureCall(3, "resources/templates/list", map[string]any{})))
		h.finish()
	})
}

func TestResourcesPagination(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, server.WithPageSize(2))
		nop := func(context.Context, *server.ReadResourceRequest) (*server.ReadResourceResult, error) {
			return nil, nil
		}
		for i := range 5 {
			require.NoError(t, h.srv.AddResource(server.Resource{URI: fmt.Sprintf("test://r%d", i), Name: "r"}, nop))
		}
		for i := range 3 {
			require.NoError(t, h.srv.AddResourceTemplate(server.ResourceTemplate{URITemplate: fmt.Sprintf("test://t%d/{x}", i), Name: "t"}, nop))
		}
		h.start()
		h.Initialize(protocol.Version20251125, nil)

		type page struct {
			Resources []struct {
				URI string `json:"uri"`
			} `json:"resources"`
			ResourceTemplates []struct {
				URITemplate string `json:"uriTemplate"`
			} `json:"resourceTemplates"`
			NextCursor string `json:"nextCursor"`
		}
		walk := func(method string, id int64) (pages [][]string) {
			cursor := ""
			for {
				params := map[string]any{}
				if cursor != "" {
					params["cursor"] = cursor
				}
				var p page
				require.NoError(t, json.Unmarshal(h.featureCall(id, method, params), &p))
				id++
				var keys []string
				for _, r := range p.Resources {
					keys = append(keys, r.URI)
				}
				for _, r := range p.ResourceTemplates {
					keys = append(keys, r.URITemplate)
				}
				pages = append(pages, keys)
				if p.NextCursor == "" {
					return pages
				}
				cursor = p.NextCursor
			}
		}
		assert.Equal(t, [][]string{{"test://r0", "test://r1"}, {"test://r2", "test://r3"}, {"test://r4"}}, walk("resources/list", 10))
		assert.Equal(t, [][]string{{"test://t0/{x}", "test://t1/{x}"}, {"test://t2/{x}"}}, walk("resources/templates/list", 20))

		for i, method := range []string{"resources/list", "resources/templates/list"} {
			e := h.featureError(int64(30+i), method, map[string]any{"cursor": "not a cursor!"})
			assert.Equal(t, int64(protocol.CodeInvalidParams), e.Code, method)
			e = h.featureError(int64(40+i), method, []int{1})
			assert.Equal(t, int64(protocol.CodeInvalidParams), e.Code, method)
		}
		h.finish()
	})
}

func TestReadResource(t *testing.T) {
	tests := []struct {
		name string
		uri  string
		want string
	}{
		{"static text gets its uri", "test://static-text", `{"contents":[{"uri":"test://static-text","mimeType":"text/plain","text":"hello"}]}`},
		{"static blob", "test://static-binary", `{"contents":[{"uri":"test://static-binary","mimeType":"image/png","blob":"AQID"}]}`},
		{
			"template with variables", "test://items/42/data?fields=a,b",
			`{"contents":[{"uri":"test://items/42/data?fields=a,b","mimeType":"application/json",
			  "text":"{\"template\":\"test://items/{id}/data{?fields}\",\"vars\":{\"fields\":\"a,b\",\"id\":\"42\"}}"}]}`,
		},
		{
			"optional variable left out, percent-decoded value", "test://items/4%202/data",
			`{"contents":[{"uri":"test://items/4%202/data","mimeType":"application/json",
			  "text":"{\"template\":\"test://items/{id}/data{?fields}\",\"vars\":{\"id\":\"4 2\"}}"}]}`,
		},
		{
			"exploded list joined", "list:///a/b/c",
			`{"contents":[{"uri":"list:///a/b/c","mimeType":"application/json",
			  "text":"{\"template\":\"list://{/segs*}\",\"vars\":{\"segs\":\"a,b,c\"}}"}]}`,
		},
		{
			"second template", "test://other",
			`{"contents":[{"uri":"test://other","mimeType":"application/json",
			  "text":"{\"template\":\"test://{name}\",\"vars\":{\"name\":\"other\"}}"}]}`,
		},
		{"nil result is empty contents", "test://errors/nil-result", `{"contents":[]}`},
		{
			"several contents and _meta", "test://errors/two",
			`{"contents":[{"uri":"test://errors/two/a","text":"a"},{"uri":"test://errors/two/b","blob":""}],"_meta":{"m":1}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := resourceHarness(t)
				assert.JSONEq(t, tt.want, string(h.featureCall(2, "resources/read", map[string]any{"uri": tt.uri})))
				h.finish()
			})
		})
	}
}

func TestReadResourceErrors(t *testing.T) {
	tests := []struct {
		name     string
		method   string
		params   any
		wantCode protocol.Code
		wantData string // "" for none
	}{
		{"unknown uri", "resources/read", map[string]any{"uri": "nope://x"}, protocol.CodeResourceNotFound, `{"uri":"nope://x"}`},
		{"handler says not found", "resources/read", map[string]any{"uri": "test://errors/missing"}, protocol.CodeResourceNotFound, `{"uri":"test://errors/missing"}`},
		{"handler protocol error", "resources/read", map[string]any{"uri": "test://errors/protocol"}, protocol.CodeInvalidParams, ""},
		{"handler plain error", "resources/read", map[string]any{"uri": "test://errors/internal"}, protocol.CodeInternal, ""},
		{"nil contents entry", "resources/read", map[string]any{"uri": "test://errors/nil-entry"}, protocol.CodeInternal, ""},
		{"no params", "resources/read", nil, protocol.CodeInvalidParams, ""},
		{"params not an object", "resources/read", []string{"test://static-text"}, protocol.CodeInvalidParams, ""},
		{"no uri", "resources/read", map[string]any{}, protocol.CodeInvalidParams, ""},
		{"null uri", "resources/read", map[string]any{"uri": nil}, protocol.CodeInvalidParams, ""},
		{"empty uri", "resources/read", map[string]any{"uri": ""}, protocol.CodeInvalidParams, ""},
		{"uri not a string", "resources/read", map[string]any{"uri": 7}, protocol.CodeInvalidParams, ""},
		{"malformed uri", "resources/read", map[string]any{"uri": "http://%zz"}, protocol.CodeInvalidParams, ""},
		{"subscribe to unknown uri", "resources/subscribe", map[string]any{"uri": "nope://x"}, protocol.CodeResourceNotFound, `{"uri":"nope://x"}`},
		{"subscribe without uri", "resources/subscribe", map[string]any{}, protocol.CodeInvalidParams, ""},
		{"subscribe uri not a string", "resources/subscribe", map[string]any{"uri": true}, protocol.CodeInvalidParams, ""},
		{"unsubscribe without uri", "resources/unsubscribe", nil, protocol.CodeInvalidParams, ""},
		{"unsubscribe uri not a string", "resources/unsubscribe", map[string]any{"uri": []int{}}, protocol.CodeInvalidParams, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := resourceHarness(t)
				e := h.featureError(2, tt.method, tt.params)
				assert.Equal(t, int64(tt.wantCode), e.Code)
				if tt.wantData == "" {
					assert.Empty(t, e.Data)
				} else {
					assert.JSONEq(t, tt.wantData, string(e.Data))
					assert.Equal(t, "Resource not found", e.Message)
				}
				if tt.wantCode == protocol.CodeInternal {
					assert.Equal(t, "internal error", e.Message, "details stay in the logs")
				}
				// The session goes on serving.
				assert.JSONEq(t, `{"contents":[{"uri":"test://static-text","mimeType":"text/plain","text":"hello"}]}`,
					string(h.featureCall(3, "resources/read", map[string]any{"uri": "test://static-text"})))
				h.finish()
			})
		})
	}
}

// In 2026-07-28 an unknown resource is -32602 (SEP-2164), still with the uri.
func TestReadResourceNotFound2026(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		addResources(t, h.srv)
		h.start()
		meta := map[string]any{
			vocab.MetaProtocolVersion:    protocol.Version20260728,
			vocab.MetaClientCapabilities: map[string]any{},
		}
		for id, uri := range map[int64]string{2: "nope://x", 3: "test://errors/missing"} {
			e := h.featureError(id, "resources/read", map[string]any{"uri": uri, "_meta": meta})
			assert.Equal(t, int64(protocol.CodeInvalidParams), e.Code)
			assert.JSONEq(t, fmt.Sprintf(`{"uri":%q}`, uri), string(e.Data))
		}
		h.finish()
	})
}

func TestAddResourceRejectsInvalid(t *testing.T) {
	testkit.Watchdog(t)
	nop := func(context.Context, *server.ReadResourceRequest) (*server.ReadResourceResult, error) {
		return nil, nil
	}
	complete := func(context.Context, *server.CompleteRequest) ([]string, error) { return nil, nil }
	resources := []struct {
		name string
		res  server.Resource
		h    server.ResourceHandler
	}{
		{"empty uri", server.Resource{Name: "x"}, nop},
		{"relative uri", server.Resource{URI: "a/b", Name: "x"}, nop},
		{"malformed uri", server.Resource{URI: "http://%zz", Name: "x"}, nop},
		{"empty name", server.Resource{URI: "test://a"}, nop},
		{"nil handler", server.Resource{URI: "test://a", Name: "x"}, nil},
	}
	for _, tt := range resources {
		t.Run(tt.name, func(t *testing.T) {
			srv := server.New()
			require.Error(t, srv.AddResource(tt.res, tt.h))
			assert.Zero(t, srv.RemoveResources(tt.res.URI), "nothing was registered")
		})
	}
	templates := []struct {
		name string
		tmpl server.ResourceTemplate
		h    server.ResourceHandler
	}{
		{"empty template", server.ResourceTemplate{Name: "x"}, nop},
		{"unterminated expression", server.ResourceTemplate{URITemplate: "test://{id", Name: "x"}, nop},
		{"bad variable name", server.ResourceTemplate{URITemplate: "test://{a b}", Name: "x"}, nop},
		{"stray brace", server.ResourceTemplate{URITemplate: "test://}", Name: "x"}, nop},
		{"empty name", server.ResourceTemplate{URITemplate: "test://{id}"}, nop},
		{"nil handler", server.ResourceTemplate{URITemplate: "test://{id}", Name: "x"}, nil},
		{"completer for unknown variable", server.ResourceTemplate{URITemplate: "test://{id}", Name: "x", Complete: map[string]server.CompleteFunc{"other": complete}}, nop},
		{"nil completer", server.ResourceTemplate{URITemplate: "test://{id}", Name: "x", Complete: map[string]server.CompleteFunc{"id": nil}}, nop},
	}
	for _, tt := range templates {
		t.Run("template/"+tt.name, func(t *testing.T) {
			srv := server.New()
			require.Error(t, srv.AddResourceTemplate(tt.tmpl, tt.h))
			assert.Zero(t, srv.RemoveResourceTemplates(tt.tmpl.URITemplate), "nothing was registered")
		})
	}
}

// Fixed resources win over templates, templates are tried in the order
// added, and replacing a template keeps its place.
func TestResourceMatchOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		serve := func(tag string) server.ResourceHandler {
			return func(context.Context, *server.ReadResourceRequest) (*server.ReadResourceResult, error) {
				return textContents(tag), nil
			}
		}
		srv := h.srv
		require.NoError(t, srv.AddResourceTemplate(server.ResourceTemplate{URITemplate: "test://{a}", Name: "first"}, serve("first")))
		require.NoError(t, srv.AddResourceTemplate(server.ResourceTemplate{URITemplate: "test://{b}", Name: "second"}, serve("second")))
		require.NoError(t, srv.AddResource(server.Resource{URI: "test://fixed", Name: "fixed"}, serve("fixed")))
		h.start()
		h.Initialize(protocol.Version20251125, nil)
		id := int64(1)
		read := func(uri string) string {
			id++
			var r struct {
				Contents []struct {
					Text string `json:"text"`
				} `json:"contents"`
			}
			require.NoError(t, json.Unmarshal(h.featureCall(id, "resources/read", map[string]any{"uri": uri}), &r))
			require.Len(t, r.Contents, 1)
			return r.Contents[0].Text
		}
		assert.Equal(t, "fixed", read("test://fixed"))
		assert.Equal(t, "first", read("test://x"))
		require.NoError(t, srv.AddResourceTemplate(server.ResourceTemplate{URITemplate: "test://{a}", Name: "first"}, serve("first again")))
		assert.Equal(t, "first again", read("test://x"), "a replaced template keeps its place")
		assert.Equal(t, 1, srv.RemoveResources("test://fixed", "test://never"))
		assert.Equal(t, "first again", read("test://fixed"), "with the fixed resource gone, a template serves")
		assert.Equal(t, 1, srv.RemoveResourceTemplates("test://{a}", "test://{zzz}"))
		assert.Equal(t, "second", read("test://x"))
		assert.Equal(t, 1, srv.RemoveResourceTemplates("test://{b}"))
		e := h.featureError(100, "resources/read", map[string]any{"uri": "test://x"})
		assert.Equal(t, int64(protocol.CodeMethodNotFound), e.Code, "with nothing left, resources are no longer declared")
		// Each change above scheduled list_changed; they were coalesced.
		time.Sleep(time.Second)
		m := h.Recv().(*transport.Request)
		assert.Equal(t, "notifications/resources/list_changed", m.Method)
		h.expectNothingPending(101)
		h.finish()
	})
}

func TestResourceListChanged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, server.WithListChangedDelay(50*time.Millisecond))
		h.start()
		h.Initialize(protocol.Version20251125, nil)
		nop := func(context.Context, *server.ReadResourceRequest) (*server.ReadResourceResult, error) {
			return nil, nil
		}

		require.NoError(t, h.srv.AddResource(server.Resource{URI: "test://a", Name: "a"}, nop))
		require.NoError(t, h.srv.AddResourceTemplate(server.ResourceTemplate{URITemplate: "test://t/{x}", Name: "t"}, nop))
		start := time.Now()
		m, ok := h.Recv().(*transport.Request)
		require.True(t, ok)
		assert.Equal(t, "notifications/resources/list_changed", m.Method)
		assert.Equal(t, 50*time.Millisecond, time.Since(start), "sent after the delay")
		h.expectNothingPending(2) // two changes, one notification

		assert.Equal(t, 1, h.srv.RemoveResources("test://a"))
		m, ok = h.Recv().(*transport.Request)
		require.True(t, ok)
		assert.Equal(t, "notifications/resources/list_changed", m.Method)
		assert.Equal(t, 1, h.srv.RemoveResourceTemplates("test://t/{x}"))
		m, ok = h.Recv().(*transport.Request)
		require.True(t, ok)
		assert.Equal(t, "notifications/resources/list_changed", m.Method)

		assert.Zero(t, h.srv.RemoveResources("test://a"))
		assert.Zero(t, h.srv.RemoveResourceTemplates("test://t/{x}"))
		time.Sleep(time.Second)
		h.expectNothingPending(3) // removing nothing changes nothing
		h.finish()
	})
}

func TestResourceSubscriptions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := resourceHarness(t)
		b := a.second()
		b.Initialize(protocol.Version20251125, nil)
		sessionOf := func(h *harness) *server.Session {
			// The harness's sessions are told apart by their subscriptions.
			return onlySession(t, h.srv, func(ss *server.Session) bool { return len(ss.Subscriptions()) > 0 })
		}

		assert.JSONEq(t, `{}`, string(a.featureCall(2, "resources/subscribe", map[string]any{"uri": "test://static-text"})))
		assert.JSONEq(t, `{}`, string(a.featureCall(3, "resources/subscribe", map[string]any{"uri": "test://items/7/data"})))
		assert.JSONEq(t, `{}`, string(a.featureCall(4, "resources/subscribe", map[string]any{"uri": "test://static-text"})), "subscribing twice is fine")
		ssA := sessionOf(a)
		assert.Equal(t, []string{"test://items/7/data", "test://static-text"}, ssA.Subscriptions())

		a.srv.ResourceUpdated("test://static-text")
		m, ok := a.Recv().(*transport.Request)
		require.True(t, ok)
		assert.Equal(t, "notifications/resources/updated", m.Method)
		assert.JSONEq(t, `{"uri":"test://static-text"}`, string(m.Params))
		assert.True(t, m.IsNotification())
		a.expectNothingPending(5) // exactly one
		b.expectNothingPending(5) // not subscribed

		a.srv.ResourceUpdated("test://items/7/data")
		m, ok = a.Recv().(*transport.Request)
		require.True(t, ok)
		assert.JSONEq(t, `{"uri":"test://items/7/data"}`, string(m.Params))
		a.srv.ResourceUpdated("test://items/8/data") // nobody subscribed to this one
		a.expectNothingPending(6)
		b.expectNothingPending(6)

		assert.JSONEq(t, `{}`, string(a.featureCall(7, "resources/unsubscribe", map[string]any{"uri": "test://static-text"})))
		assert.JSONEq(t, `{}`, string(a.featureCall(8, "resources/unsubscribe", map[string]any{"uri": "test://never"})), "unsubscribing is idempotent")
		assert.Equal(t, []string{"test://items/7/data"}, ssA.Subscriptions())
		a.srv.ResourceUpdated("test://static-text")
		a.expectNothingPending(9)
		b.expectNothingPending(9)

		a.finish()
		b.finish()
	})
}

func TestSubscriptionsDroppedWhenSessionEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := resourceHarness(t)
		h.featureCall(2, "resources/subscribe", map[string]any{"uri": "test://static-text"})
		ss := onlySession(t, h.srv, nil)
		require.Equal(t, []string{"test://static-text"}, ss.Subscriptions())
		h.finish()
		assert.Empty(t, ss.Subscriptions())
		h.srv.ResourceUpdated("test://static-text") // nobody to tell
		synctest.Wait()
	})
}

// onlySession returns the one session of srv that match accepts (nil: any).
func onlySession(t *testing.T, srv *server.Server, match func(*server.Session) bool) *server.Session {
	var found []*server.Session
	for _, ss := range srv.Sessions() {
		if match == nil || match(ss) {
			found = append(found, ss)
		}
	}
	sort.Slice(found, func(i, j int) bool { return found[i].ID() < found[j].ID() })
	require.Len(t, found, 1)
	return found[0]
}

// In 2026-07-28, subscriptions/listen streams that name a URI get its
// updates, tagged with the stream's id.
func TestResourceUpdatedReachesListenStreams(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		addResources(t, h.srv)
		h.start()
		meta := map[string]any{
			vocab.MetaProtocolVersion:    protocol.Version20260728,
			vocab.MetaClientCapabilities: map[string]any{},
		}
		h.Request(7, "subscriptions/listen", map[string]any{
			"_meta": meta, "notifications": map[string]any{"resourceSubscriptions": []string{"test://static-text"}},
		})
		ack, ok := h.Recv().(*transport.Request)
		require.True(t, ok)
		require.Equal(t, "notifications/subscriptions/acknowledged", ack.Method)

		h.srv.ResourceUpdated("test://static-binary") // not listened to
		h.srv.ResourceUpdated("test://static-text")
		m, ok := h.Recv().(*transport.Request)
		require.True(t, ok)
		assert.Equal(t, "notifications/resources/updated", m.Method)
		assert.JSONEq(t, `{"uri":"test://static-text","_meta":{"io.modelcontextprotocol/subscriptionId":7}}`, string(m.Params))
		synctest.Wait()
		h.Request(8, "tools/list", map[string]any{"_meta": meta})
		resp := h.RecvResponse() // nothing else was queued before it
		assert.Equal(t, transport.Int64ID(8), resp.ID)
		h.finish()
	})
}

// Changing the templates while reads match against them is safe (run with
// -race).
func TestResourceTemplatesChangeDuringReads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		addResources(t, h.srv)
		h.start()
		meta := map[string]any{
			vocab.MetaProtocolVersion:    protocol.Version20260728,
			vocab.MetaClientCapabilities: map[string]any{},
		}
		nop := func(context.Context, *server.ReadResourceRequest) (*server.ReadResourceResult, error) {
			return nil, nil
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := range 200 {
				tmpl := fmt.Sprintf("churn://%d/{x}", i%3)
				assert.NoError(t, h.srv.AddResourceTemplate(server.ResourceTemplate{URITemplate: tmpl, Name: "churn"}, nop))
				if i%2 == 0 {
					assert.Equal(t, 1, h.srv.RemoveResourceTemplates(tmpl))
				}
			}
		}()
		for i := range 200 {
			// A URI that no template matches is tried against them all.
			e := h.featureError(int64(i+2), "resources/read", map[string]any{"uri": "zzz://x", "_meta": meta})
			require.Equal(t, int64(protocol.CodeInvalidParams), e.Code)
		}
		<-done
		h.finish()
	})
}
