package oauth

// maxActors bounds the act chain a token may carry (RFC 8693 §4.1 sets no
// bound): a deeper chain is refused, not cut, so that no actor of a
// delegated request goes unrecorded.
const maxActors = 8

// maxActorBytes bounds one actor's subject, as shown in logs and spans.
const maxActorBytes = 256

// actorsOf returns the subjects of an act claim's chain (RFC 8693 §4.1),
// outermost first: act's sub, then its own act's sub, and so on; nil when
// act is absent (nil). A chain that is not a nest of JSON objects each with
// a non-empty string sub, deeper than maxActors, or with a subject over
// maxActorBytes, is invalid_token: a delegated token whose actors cannot
// all be named must not pass as the subject's own.
func actorsOf(act any) ([]string, error) {
	var actors []string
	for act != nil {
		obj, ok := act.(map[string]any)
		if !ok {
			return nil, &Error{Reason: ReasonInvalidToken, Description: "malformed act claim"}
		}
		sub, _ := obj["sub"].(string)
		switch {
		case sub == "":
			return nil, &Error{Reason: ReasonInvalidToken, Description: "an actor (act claim) has no subject"}
		case len(sub) > maxActorBytes:
			return nil, &Error{Reason: ReasonInvalidToken, Description: "an actor's subject (act claim) is too long"}
		case len(actors) == maxActors:
			return nil, &Error{Reason: ReasonInvalidToken, Description: "the act claim's chain is too deep"}
		}
		actors = append(actors, sub)
		act = obj["act"]
	}
	return actors, nil
}
