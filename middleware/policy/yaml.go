package policy

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// UnmarshalYAML reads a policy file: a mapping with an optional default,
// an expression, and tools, a mapping of tool names to expressions.
// Anything else (another key, a key twice, an expression that is not a
// scalar) is refused with its line. The line of each policy is kept, for
// the errors of [New].
func (cfg *Config) UnmarshalYAML(value *yaml.Node) error {
	if value.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: a policy file is a mapping with default and tools", value.Line)
	}
	cfg.Default, cfg.Tools, cfg.lines = "", map[string]string{}, map[string]int{}
	seen := map[string]bool{}
	for i := 0; i+1 < len(value.Content); i += 2 {
		k, v := value.Content[i], value.Content[i+1]
		if seen[k.Value] {
			return fmt.Errorf("line %d: %s given twice", k.Line, k.Value)
		}
		seen[k.Value] = true
		switch k.Value {
		case defaultName:
			if v.Kind != yaml.ScalarNode {
				return fmt.Errorf("line %d: default must be an expression", v.Line)
			}
			cfg.Default, cfg.lines[defaultName] = v.Value, v.Line
		case "tools":
			if v.Kind != yaml.MappingNode {
				return fmt.Errorf("line %d: tools must map tool names to expressions", v.Line)
			}
			for j := 0; j+1 < len(v.Content); j += 2 {
				tk, tv := v.Content[j], v.Content[j+1]
				if _, dup := cfg.Tools[tk.Value]; dup {
					return fmt.Errorf("line %d: tool %s given twice", tk.Line, tk.Value)
				}
				if tv.Kind != yaml.ScalarNode {
					return fmt.Errorf("line %d: the policy of tool %s must be an expression", tv.Line, tk.Value)
				}
				cfg.Tools[tk.Value], cfg.lines["tools."+tk.Value] = tv.Value, tv.Line
			}
		default:
			return fmt.Errorf("line %d: unknown key %q (a policy file has default and tools)", k.Line, k.Value)
		}
	}
	return nil
}
