package server_test

import (
	"context"
	"strconv"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// TestItemViewSubscribeComplete: what an item view hides is refused by
// resources/subscribe and completion/complete as the unknown is (a
// resource URI nothing serves; an unknown prompt or template), while
// what it shows is served; subscriptions/listen does not honor a
// subscription to a hidden resource. Without the view, each is served.
func TestItemViewSubscribeComplete(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		nop := func(context.Context, *server.CompleteRequest) ([]string, error) { return []string{"v"}, nil }
		read := func(context.Context, *server.ReadResourceRequest) (*server.ReadResourceResult, error) {
			return textContents("x"), nil
		}
		for _, uri := range []string{"note:shown", "note:hidden"} {
			require.NoError(t, h.srv.AddResource(server.Resource{URI: uri, Name: uri}, read))
		}
		for _, tmpl := range []string{"shown://{a}", "hidden://{a}"} {
			tt := server.ResourceTemplate{URITemplate: tmpl, Name: tmpl, Complete: map[string]server.CompleteFunc{"a": nop}}
			require.NoError(t, h.srv.AddResourceTemplate(tt, read))
		}
		for _, name := range []string{"shown", "hidden"} {
			require.NoError(t, h.srv.AddPrompt(server.Prompt{Name: name, Arguments: []server.PromptArgument{{Name: "x", Complete: nop}}},
				func(context.Context, *server.GetPromptRequest) (*server.GetPromptResult, error) { return nil, nil }))
		}
		hidden := map[string]bool{
			server.ItemResource + " note:hidden": true, server.ItemResourceTemplate + " hidden://{a}": true, server.ItemPrompt + " hidden": true,
		}
		h.start()
		h.Initialize(protocol.Version20251125, nil)
		complete := func(ref map[string]any) map[string]any {
			return map[string]any{"ref": ref, "argument": completeArg("x", "")}
		}
		completeT := func(uri string) map[string]any {
			return map[string]any{"ref": templateRef(uri), "argument": completeArg("a", "")}
		}
		id := int64(0)
		next := func() int64 { id++; return id }

		// Without a view, all is served.
		h.featureCall(next(), "resources/subscribe", map[string]any{"uri": "note:hidden"})
		h.featureCall(next(), "completion/complete", complete(promptRef("hidden")))
		h.featureCall(next(), "completion/complete", completeT("hidden://{a}"))

		h.srv.SetItemView(func(_ *server.Request, kind, key string) bool { return !hidden[kind+" "+key] })
		unknownSub := h.featureError(next(), "resources/subscribe", map[string]any{"uri": "note:nothing"})
		unknownPrompt := h.featureError(next(), "completion/complete", complete(promptRef("nothing")))
		unknownTmpl := h.featureError(next(), "completion/complete", completeT("nothing://{a}"))

		assert.JSONEq(t, `{}`, string(h.featureCall(next(), "resources/subscribe", map[string]any{"uri": "note:shown"})))
		assert.JSONEq(t, `{}`, string(h.featureCall(next(), "resources/subscribe", map[string]any{"uri": "shown://1"})))
		for _, uri := range []string{"note:hidden", "hidden://1"} {
			e := h.featureError(next(), "resources/subscribe", map[string]any{"uri": uri})
			assert.Equal(t, unknownSub.Code, e.Code, uri)
			assert.Equal(t, unknownSub.Message, e.Message, uri)
		}
		assert.JSONEq(t, completionJSON([]string{"v"}, 1, false), string(h.featureCall(next(), "completion/complete", complete(promptRef("shown")))))
		e := h.featureError(next(), "completion/complete", complete(promptRef("hidden")))
		assert.Equal(t, unknownPrompt.Code, e.Code)
		assert.Equal(t, `completion/complete: unknown prompt: "hidden"`, e.Message)
		assert.JSONEq(t, completionJSON([]string{"v"}, 1, false), string(h.featureCall(next(), "completion/complete", completeT("shown://{a}"))))
		e = h.featureError(next(), "completion/complete", completeT("hidden://{a}"))
		assert.Equal(t, unknownTmpl.Code, e.Code)
		assert.Equal(t, `completion/complete: unknown resource template: "hidden://{a}"`, e.Message)

		l := h.second() // a 2026-07-28 session
		l.Request(next(), "subscriptions/listen", map[string]any{"_meta": meta2026(nil), "notifications": map[string]any{
			"resourceSubscriptions": []string{"note:shown", "note:hidden", "hidden://2", "shown://2"},
		}})
		ack := l.notification()
		assert.Equal(t, "notifications/subscriptions/acknowledged", ack.Method)
		assert.JSONEq(t, `{"notifications":{"resourceSubscriptions":["note:shown","shown://2"]},"_meta":{"io.modelcontextprotocol/subscriptionId":`+
			strconv.FormatInt(id, 10)+`}}`, string(ack.Params), "a hidden resource's subscription is not honored")
		l.Cancel(id, "done")
		synctest.Wait()
		l.finish()
		h.finish()
	})
}
