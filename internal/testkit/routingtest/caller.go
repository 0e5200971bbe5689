package routingtest

import (
	"encoding/json"
	"fmt"
)

// Caller is the client side Listen needs, in JSON: an *mcptest.Client
// behind three lines of a test's own (its Recv and Send, through
// transport.AppendMessage and transport.DecodeMessage).
type Caller interface {
	// Request sends the request id of method with params.
	Request(id int64, method string, params any)
	// Next returns the next message the caller is told, as JSON.
	Next() []byte
	// Answer sends msg, a JSON-RPC answer, to the server.
	Answer(msg []byte)
}

// Params is the params of who's call of "confirm" {text, wait}; with a
// version (2026-07-28), a stateless caller's, which carry their _meta:
// elicitation declared, every log level.
func Params(version, who, text string, wait bool) map[string]any {
	p := map[string]any{"name": "confirm", "arguments": map[string]any{"text": text, "wait": wait}}
	if version != "" {
		p["_meta"] = map[string]any{
			"io.modelcontextprotocol/protocolVersion":    version,
			"io.modelcontextprotocol/clientCapabilities": map[string]any{"elicitation": map[string]any{}},
			"io.modelcontextprotocol/clientInfo":         map[string]string{"name": who, "version": "1"},
			"io.modelcontextprotocol/logLevel":           "debug",
		}
	}
	return p
}

// message is a JSON-RPC message as Listen reads it.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// Listen reads what c is told until its call id of "confirm" {text} as
// who (sent with [Params], with version) ends, declining every question:
// in a session, a request; stateless, an input_required round, retried
// with the answers under the ids after id. It returns each notification
// and question as text, and the result's text; an error when the call
// ends otherwise.
func Listen(c Caller, id int64, version, who, text string) (heard []string, result string, err error) {
	for {
		var m message
		if err := json.Unmarshal(c.Next(), &m); err != nil {
			return heard, "", fmt.Errorf("call %d: %w", id, err)
		}
		if m.Method != "" {
			heard = append(heard, m.Method+" "+string(m.Params))
			switch {
			case len(m.ID) == 0: // a notification
			case m.Method == "elicitation/create":
				c.Answer(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"result":{"action":"decline"}}`, m.ID))
			default:
				c.Answer(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"not handled"}}`, m.ID))
			}
			continue
		}
		if string(m.ID) != fmt.Sprint(id) || m.Error != nil {
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
		p := Params(version, who, text, false)
		p["inputResponses"], p["requestState"] = answers, r.RequestState
		id++
		c.Request(id, "tools/call", p)
	}
}

// describe is an answer as the error of Listen shows it.
func describe(m message) string {
	if m.Error != nil {
		return fmt.Sprintf("to %s: error %d %s", m.ID, m.Error.Code, m.Error.Message)
	}
	return fmt.Sprintf("to %s: %s", m.ID, m.Result)
}
