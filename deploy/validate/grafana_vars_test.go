package validate

import (
	"fmt"
	"regexp"
	"strings"
)

// grafanaVarSentinel marks where a dashboard variable was in an expression
// after [expandGrafana]; it is a valid label value and regex.
const grafanaVarSentinel = "__grafana_var__"

// grafanaIntervals are Grafana's built-in interval variables with the value
// they stand for when an expression is checked offline.
var grafanaIntervals = map[string]string{
	"__rate_interval": "5m",
	"__interval":      "1m",
	"__range":         "1h",
}

// grafanaVarRE matches $name, ${name}, ${name:format} and [[name]].
var grafanaVarRE = regexp.MustCompile(`\$\{([A-Za-z0-9_]+)(?::[A-Za-z0-9_]+)?\}|\$([A-Za-z0-9_]+)|\[\[([A-Za-z0-9_]+)\]\]`)

// expandGrafana replaces Grafana's interval variables by durations and the
// dashboard's own variables by [grafanaVarSentinel] + name, so that the
// expression parses as PromQL and each variable can be found afterwards. A
// variable that is neither built in nor in vars is an error.
func expandGrafana(expr string, vars map[string]bool) (string, error) {
	var err error
	out := grafanaVarRE.ReplaceAllStringFunc(expr, func(m string) string {
		sub := grafanaVarRE.FindStringSubmatch(m)
		name := sub[1] + sub[2] + sub[3]
		if d, ok := grafanaIntervals[name]; ok {
			return d
		}
		if !vars[name] {
			err = fmt.Errorf("%q uses $%s, which is neither a dashboard variable nor a Grafana interval", expr, name)
			return m
		}
		return grafanaVarSentinel + name
	})
	return out, err
}

// sentinelVars returns the dashboard variables a matcher value holds.
func sentinelVars(value string, vars map[string]bool) []string {
	var out []string
	for name := range vars {
		if strings.Contains(value, grafanaVarSentinel+name) {
			out = append(out, name)
		}
	}
	return out
}

// anyValue turns an expanded expression into one promtool can check:
// every variable becomes the regex .* (Grafana's "All").
func anyValue(expanded string) string {
	return regexp.MustCompile(grafanaVarSentinel+`[A-Za-z0-9_]+`).ReplaceAllString(expanded, ".*")
}
