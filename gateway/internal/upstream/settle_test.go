package upstream_test

import (
	"context"
	"encoding/json"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/gateway/internal/upstream"
	"github.com/vigil-mcp/vigil/transport"
)

// TestSettle: Settle returns only once each roots/list the upstream
// sent before it answered Settle's ping has its answer written (one
// answered before the ping's answer counts too), and does not wait for
// a request of another method; with none asked, it returns after the
// ping with 0.
func TestSettle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		s, f := open(t, upstream.Config{Name: "u", OnRequest: func(ctx context.Context, req *transport.Request) (json.RawMessage, error) {
			if req.Method == "roots/list" && req.ID == transport.Int64ID(2) {
				<-release // the client takes its time
			}
			if req.Method == "sampling/createMessage" {
				<-ctx.Done()
				return nil, context.Cause(ctx)
			}
			return json.RawMessage(`{"roots":[]}`), nil
		}})
		type settled struct {
			asked int
			err   error
		}
		done := make(chan settled, 1)
		go func() {
			asked, err := s.Settle(t.Context(), "roots/list")
			done <- settled{asked, err}
		}()
		ping := f.request("ping")
		f.send(&transport.Request{ID: transport.Int64ID(1), Method: "roots/list"})
		assert.Equal(t, transport.Int64ID(1), f.response().ID) // answered before the ping's answer
		f.send(&transport.Request{ID: transport.Int64ID(2), Method: "roots/list"})
		f.send(&transport.Request{ID: transport.Int64ID(3), Method: "sampling/createMessage", Params: json.RawMessage(`{}`)})
		f.answer(ping.ID, `{}`)
		synctest.Wait()
		select {
		case <-done:
			t.Fatal("Settle returned before the upstream's roots/list had its answer")
		default:
		}
		close(release)
		assert.Equal(t, transport.Int64ID(2), f.response().ID)
		got := <-done
		require.NoError(t, got.err)
		assert.Equal(t, 3, got.asked, "every request the upstream made so far")

		go func() {
			asked, err := s.Settle(t.Context(), "roots/list")
			done <- settled{asked, err}
		}()
		f.answer(f.request("ping").ID, `{}`)
		got = <-done
		require.NoError(t, got.err)
		assert.Equal(t, 3, got.asked, "none since")
	})
}
