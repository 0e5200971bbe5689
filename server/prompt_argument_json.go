package server

import "encoding/json"

// promptArgumentJSON is a PromptArgument as prompts/list shows it, its
// "required" member as it was sent, when it was.
type promptArgumentJSON struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Required    *bool  `json:"required,omitempty"`
}

// MarshalJSON encodes the argument as prompts/list shows it: "required"
// when it is, and "required": false when it was decoded from that
// (UnmarshalJSON), so that a gateway relays a prompt as it was sent.
func (a PromptArgument) MarshalJSON() ([]byte, error) {
	w := promptArgumentJSON{Name: a.Name, Title: a.Title, Description: a.Description}
	if a.Required || a.saysOptional {
		required := a.Required
		w.Required = &required
	}
	return json.Marshal(w)
}

// UnmarshalJSON decodes an argument as a server lists it, and remembers a
// "required": false, which MarshalJSON writes again.
func (a *PromptArgument) UnmarshalJSON(b []byte) error {
	var w promptArgumentJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*a = PromptArgument{Name: w.Name, Title: w.Title, Description: w.Description}
	if w.Required != nil {
		a.Required, a.saysOptional = *w.Required, !*w.Required
	}
	return nil
}
