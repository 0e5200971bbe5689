package routingtest

import (
	"encoding/json"
	"fmt"

	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// Caller is the client side Listen needs: an *mcptest.Client.
type Caller interface {
	Recv() transport.Message
	Request(id int64, method string, params any)
	Reply(req *transport.Request, result any)
	ReplyError(req *transport.Request, code int64, message string)
}

// Params is the params of who's call of "confirm" {text, wait}; a
// stateless (2026-07-28) caller's carry its _meta: elicitation declared,
// every log level.
func Params(stateless bool, who, text string, wait bool) map[string]any {
	p := map[string]any{"name": "confirm", "arguments": map[string]any{"text": text, "wait": wait}}
	if stateless {
		p["_meta"] = map[string]any{
			"io.modelcontextprotocol/protocolVersion":    protocol.Version20260728,
			"io.modelcontextprotocol/clientCapabilities": map[string]any{"elicitation": map[string]any{}},
			"io.modelcontextprotocol/clientInfo":         map[string]string{"name": who, "version": "1"},
			"io.modelcontextprotocol/logLevel":           "debug",
		}
	}
	return p
}

// Listen reads what c is told until its call id of "confirm" {text} as
// who (sent with [Params]) ends, declining every question: in a session,
// a request; stateless, an input_required round, retried with the answers
// under the ids after id. It returns each notification and question as
// text, and the result's text; an error when the call ends otherwise.
func Listen(c Caller, id int64, stateless bool, who, text string) (heard []string, result string, err error) {
	for {
		switch m := c.Recv().(type) {
		case *transport.Request:
			heard = append(heard, m.Method+" "+string(m.Params))
			switch {
			case m.IsNotification():
			case m.Method == "elicitation/create":
				c.Reply(m, map[string]any{"action": "decline"})
			default:
				c.ReplyError(m, int64(protocol.CodeMethodNotFound), "not handled")
			}
		case *transport.Response:
			if m.ID != transport.Int64ID(id) || m.Error != nil {
				return heard, "", fmt.Errorf("call %d: got the answer %s", id, describe(m))
			}
			var r struct {
				ResultType    string                     `json:"resultType"`
				InputRequests map[string]json.RawMessage `json:"inputRequests"`
				RequestState  string                     `json:"requestState"`
				Content       []struct {
					Text string `json:"text"`
				} `json:"content"`
			}
			if err := json.Unmarshal(m.Result, &r); err != nil {
				return heard, "", fmt.Errorf("call %d: %w", id, err)
			}
			if r.ResultType != "input_required" {
				if len(r.Content) != 1 {
					return heard, "", fmt.Errorf("call %d: the result %s has not one content item", id, m.Result)
				}
				return heard, r.Content[0].Text, nil
			}
			answers := map[string]any{}
			for k, q := range r.InputRequests {
				heard = append(heard, "input "+string(q))
				answers[k] = map[string]any{"action": "decline"}
			}
			p := Params(stateless, who, text, false)
			p["inputResponses"], p["requestState"] = answers, r.RequestState
			id++
			c.Request(id, "tools/call", p)
		}
	}
}

// describe is an answer as the error of Listen shows it.
func describe(m *transport.Response) string {
	if m.Error != nil {
		return fmt.Sprintf("to %v: error %d %s", m.ID, m.Error.Code, m.Error.Message)
	}
	return fmt.Sprintf("to %v: %s", m.ID, m.Result)
}
