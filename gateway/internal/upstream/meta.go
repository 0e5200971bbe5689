package upstream

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// withMeta returns params, a JSON object (or empty: none), with members,
// JSON object members without their braces (`"k":v,...`), added to its
// _meta. Params without "_meta" anywhere, the usual case, get them spliced
// in without decoding; otherwise params is decoded, the members replace
// those of its _meta of the same names, and it is encoded again.
func withMeta(params json.RawMessage, members []byte) (json.RawMessage, error) {
	if len(members) == 0 {
		return params, nil
	}
	p := bytes.TrimSpace(params)
	if len(p) == 0 || string(p) == "null" {
		return append(append([]byte(`{"_meta":{`), members...), "}}"...), nil
	}
	if p[0] != '{' || p[len(p)-1] != '}' {
		return nil, fmt.Errorf("upstream: params: not a JSON object")
	}
	if !bytes.Contains(p, []byte(`"_meta"`)) {
		body := bytes.TrimSpace(p[1 : len(p)-1])
		out := make([]byte, 0, len(p)+len(members)+12)
		out = append(out, '{')
		if len(body) > 0 {
			out = append(append(out, body...), ',')
		}
		return append(append(append(out, `"_meta":{`...), members...), "}}"...), nil
	}
	fields := map[string]json.RawMessage{}
	if err := json.Unmarshal(p, &fields); err != nil {
		return nil, fmt.Errorf("upstream: params: %w", err)
	}
	meta := map[string]json.RawMessage{}
	if raw, ok := fields["_meta"]; ok && string(bytes.TrimSpace(raw)) != "null" {
		if err := json.Unmarshal(raw, &meta); err != nil {
			return nil, fmt.Errorf("upstream: params._meta: %w", err)
		}
	}
	add := map[string]json.RawMessage{}
	if err := json.Unmarshal(append(append([]byte{'{'}, members...), '}'), &add); err != nil {
		return nil, fmt.Errorf("upstream: _meta members: %w", err)
	}
	for k, v := range add {
		meta[k] = v
	}
	var err error
	if fields["_meta"], err = json.Marshal(meta); err != nil {
		return nil, err
	}
	return json.Marshal(fields)
}
