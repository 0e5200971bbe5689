package demotools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/vigil-mcp/vigil/internal/jsonscan"
	"github.com/vigil-mcp/vigil/server"
)

// Register registers the demo tools with srv; scopes gives each the
// scopes a caller needs (Tool.Scopes), by name.
func Register(srv *server.Server, scopes map[string][]string) error {
	return errors.Join(
		srv.AddTool(server.Tool{
			Name:        "echo",
			Scopes:      scopes["echo"],
			Description: "Returns the text it is given.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","description":"the text to return"}},"required":["text"],"additionalProperties":false}`),
		}, echo),
		srv.AddTool(server.Tool{
			Name:        "sleep",
			Scopes:      scopes["sleep"],
			Description: "Waits the given number of milliseconds, or until the call is cancelled.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"ms":{"type":"integer","minimum":0,"description":"how long to wait"}},"required":["ms"],"additionalProperties":false}`),
		}, sleep),
		srv.AddTool(server.Tool{
			Name:        "countdown",
			Scopes:      scopes["countdown"],
			Description: "Counts down from the given number, reporting progress at each step, then returns \"liftoff\".",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"from":{"type":"integer","minimum":0,"maximum":100,"description":"where to start counting down"}},"required":["from"],"additionalProperties":false}`),
		}, countdown),
		server.AddTypedTool(srv, server.Tool{
			Name:        "convert_temperature",
			Scopes:      scopes["convert_temperature"],
			Title:       "Convert a temperature",
			Description: "Converts a temperature between celsius, fahrenheit and kelvin; the result is structured ({value, unit, text}).",
			InputSchema: json.RawMessage(`{"type":"object","properties":{` +
				`"value":{"type":"number","description":"the temperature to convert"},` +
				`"from":{"type":"string","enum":["celsius","fahrenheit","kelvin"],"description":"the unit of value"},` +
				`"to":{"type":"string","enum":["celsius","fahrenheit","kelvin"],"description":"the unit to convert to"}},` +
				`"required":["value","from","to"],"additionalProperties":false}`),
		}, convertTemperature),
		server.AddTypedTool(srv, server.Tool{
			Name:        "confirm_action",
			Scopes:      scopes["confirm_action"],
			Title:       "Confirm an action",
			Description: "Asks the user, through the client (elicitation), to confirm an action, and returns the decision. Nothing is executed.",
		}, confirmAction),
	)
}

// echo returns its text. It reads the one argument it takes in place
// (jsonscan.SplitObjectInto, which wants valid JSON: the arguments of a
// decoded message are, checked again here at a fraction of the cost), as
// json.Unmarshal cost more than the rest of the tool call; and its text
// shares the request's bytes, which nothing changes (no second payload).
func echo(_ context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
	var raw [1][]byte
	if jsonscan.Valid(req.Arguments) && jsonscan.SplitObjectInto(raw[:], req.Arguments, "text") {
		if text, ok := jsonscan.DecodeStringInPlace(raw[0]); ok {
			return server.Text(text), nil
		}
	}
	return nil, errors.New(`echo needs {"text": string}`)
}

func sleep(ctx context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
	var in struct {
		MS *int64 `json:"ms"`
	}
	if err := json.Unmarshal(req.Arguments, &in); err != nil || in.MS == nil || *in.MS < 0 {
		return nil, errors.New(`sleep needs {"ms": a non-negative integer}`)
	}
	d := time.Duration(*in.MS) * time.Millisecond
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return server.Text(fmt.Sprintf("slept %d ms", *in.MS)), nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// countdownStep is the pause between two steps of countdown: long enough
// that no progress update falls within the server's progress interval.
const countdownStep = 15 * time.Millisecond

// countdown counts down from "from" (at most 100), reporting progress at
// each step (progress i of from, message "n left"), and returns "liftoff".
// It stops early, with the cancellation cause, when the call is cancelled.
func countdown(ctx context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
	var in struct {
		From *int64 `json:"from"`
	}
	if err := json.Unmarshal(req.Arguments, &in); err != nil || in.From == nil || *in.From < 0 || *in.From > 100 {
		return nil, errors.New(`countdown needs {"from": an integer from 0 to 100}`)
	}
	from := *in.From
	t := time.NewTimer(countdownStep)
	defer t.Stop()
	for i := int64(1); i <= from; i++ {
		select {
		case <-t.C:
			t.Reset(countdownStep)
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
		if err := server.ReportProgress(ctx, float64(i), float64(from), fmt.Sprintf("%d left", from-i)); err != nil {
			return nil, err
		}
	}
	return server.Text("liftoff"), nil
}

// temperatureIn is the input of convert_temperature.
type temperatureIn struct {
	Value float64 `json:"value"`
	From  string  `json:"from"`
	To    string  `json:"to"`
}

// temperatureOut is the structured result of convert_temperature.
type temperatureOut struct {
	Value float64 `json:"value" jsonschema:"the converted temperature"`
	Unit  string  `json:"unit" jsonschema:"the unit of value: celsius, fahrenheit or kelvin"`
	Text  string  `json:"text" jsonschema:"the conversion, for people"`
}

// unitSymbols are the temperature units and their symbols.
var unitSymbols = map[string]string{"celsius": "°C", "fahrenheit": "°F", "kelvin": "K"}

// convertTemperature converts in.Value from in.From to in.To, rounded to
// six decimals. A temperature below absolute zero is a tool error.
func convertTemperature(_ context.Context, _ *server.CallToolRequest, in temperatureIn) (temperatureOut, error) {
	var kelvin float64
	switch in.From {
	case "celsius":
		kelvin = in.Value + 273.15
	case "fahrenheit":
		kelvin = (in.Value-32)*5/9 + 273.15
	default:
		kelvin = in.Value
	}
	if kelvin < -1e-9 {
		return temperatureOut{}, fmt.Errorf("%g %s is below absolute zero", in.Value, unitSymbols[in.From])
	}
	var v float64
	switch in.To {
	case "celsius":
		v = kelvin - 273.15
	case "fahrenheit":
		v = (kelvin-273.15)*9/5 + 32
	default:
		v = kelvin
	}
	v = math.Round(v*1e6) / 1e6
	if v == 0 {
		v = 0 // no -0
	}
	return temperatureOut{
		Value: v,
		Unit:  in.To,
		Text:  fmt.Sprintf("%g %s = %g %s", in.Value, unitSymbols[in.From], v, unitSymbols[in.To]),
	}, nil
}

// confirmIn is the input of confirm_action.
type confirmIn struct {
	Action string `json:"action" jsonschema:"the action to confirm, as the user will read it"`
}

// confirmOut is the structured result of confirm_action.
type confirmOut struct {
	Action   string `json:"action" jsonschema:"the action the user was asked about"`
	Decision string `json:"decision" jsonschema:"confirmed, declined or cancelled"`
	Note     string `json:"note,omitempty" jsonschema:"what the user added, if anything"`
}

// The decisions of confirm_action.
const (
	decisionConfirmed = "confirmed"
	decisionDeclined  = "declined"
	decisionCancelled = "cancelled"
)

// confirmAction asks the user to confirm in.Action with a form (a required
// "confirm" checkbox and an optional note) and reports the decision. In a
// 2025 session the question is an elicitation/create request; in a
// 2026-07-28 stateless request it is an input-required result under the
// key "confirm", and the retry brings the answer. A client without the
// elicitation capability gets an error saying so.
func confirmAction(ctx context.Context, _ *server.CallToolRequest, in confirmIn) (confirmOut, error) {
	if in.Action == "" {
		return confirmOut{}, errors.New(`confirm_action needs a non-empty "action"`)
	}
	res, err := server.Elicit(server.ContextWithInputKey(ctx, "confirm"), &server.ElicitParams{
		Message: "Do you want to allow this action? " + in.Action,
		RequestedSchema: json.RawMessage(`{"type":"object","properties":{
			"confirm":{"type":"boolean","title":"Allow","description":"Check to allow the action."},
			"note":{"type":"string","title":"Note","description":"Anything to add (optional)."}},
			"required":["confirm"]}`),
	})
	if err != nil {
		return confirmOut{}, err // passes an input-required interruption on, too
	}
	out := confirmOut{Action: in.Action, Decision: decisionDeclined}
	switch res.Action {
	case server.ElicitAccept:
		if ok, _ := res.Content["confirm"].(bool); ok {
			out.Decision = decisionConfirmed
		}
		out.Note, _ = res.Content["note"].(string)
	case server.ElicitCancel:
		out.Decision = decisionCancelled
	}
	return out, nil
}
