package main

import (
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/cmd/internal/flagvalue"
)

// TestRateLimitFlags parses the rate-limit flags and their variables, and
// refuses what makes no limit.
func TestRateLimitFlags(t *testing.T) {
	cfg, err := parseConfig([]string{"-rate-limit", "50", "-rate-burst", "100", "-tool-rate-limits", "echo=10/20, slow=0.5"}, func(string) string { return "" }, io.Discard)
	require.NoError(t, err)
	assert.InDelta(t, 50, cfg.rateLimit, 0)
	assert.Equal(t, 100, cfg.rateBurst)
	assert.Equal(t, map[string]flagvalue.ToolRate{"echo": {Rate: 10, Burst: 20}, "slow": {Rate: 0.5}}, cfg.toolRateLimits)
	assert.Len(t, rateLimitOptions(cfg), 3)

	env := map[string]string{"VIGIL_RATE_LIMIT": "7", "VIGIL_TOOL_RATE_LIMITS": "echo=1/2"}
	cfg, err = parseConfig(nil, func(k string) string { return env[k] }, io.Discard)
	require.NoError(t, err)
	assert.InDelta(t, 7, cfg.rateLimit, 0)
	assert.Equal(t, map[string]flagvalue.ToolRate{"echo": {Rate: 1, Burst: 2}}, cfg.toolRateLimits)

	cfg, err = parseConfig(nil, func(string) string { return "" }, io.Discard)
	require.NoError(t, err)
	assert.Empty(t, rateLimitOptions(cfg), "no limits by default")

	for _, args := range [][]string{
		{"-rate-limit", "-1"},
		{"-rate-limit", "NaN"},
		{"-rate-limit", "+Inf"},
		{"-rate-burst", "-1"},
		{"-tool-rate-limits", "echo"},
		{"-tool-rate-limits", "echo=0"},
		{"-tool-rate-limits", "echo=x"},
		{"-tool-rate-limits", "echo=1/0"},
		{"-tool-rate-limits", "echo=1/1.5"},
		{"-tool-rate-limits", "echo=1,echo=2"},
		{"-tool-rate-limits", "=1"},
	} {
		_, err := parseConfig(args, func(string) string { return "" }, io.Discard)
		require.Error(t, err, "%q", args)
	}
	require.ErrorContains(t, checkToolRates([]string{"echo", "slow"}, map[string]flagvalue.ToolRate{"echo": {Rate: 1}, "nope": {Rate: 1}}), `unknown tools ["nope"]`)
	assert.NoError(t, checkToolRates([]string{"echo"}, map[string]flagvalue.ToolRate{"echo": {Rate: 1}}))
}
