package streamable

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The default memory budget is an eighth of the memory limit when the
// quotas are set, whatever a tuner of the collector makes of the limit
// before the endpoint is built (cmd/vigil starts its tuner in between:
// CI's TestBytesOneCallerHoldsLargeCalls, one 3 MiB call held and 255
// refused with 503, the budget an eighth of a tuned limit).
func TestMemoryBudgetTakenWhenQuotasAreSet(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(256 << 20))
	opt := WithQuotas(Quotas{})
	debug.SetMemoryLimit(16 << 20) // the tuner, after a collection
	var c config
	opt.apply(&c)
	assert.Equal(t, int64(32<<20), c.quotas.MemoryBudget)
	assert.Equal(t, int64(7), quotasBudget(Quotas{MemoryBudget: 7}), "a budget given is kept")
}

// quotasBudget returns the memory budget WithQuotas(q) sets.
func quotasBudget(q Quotas) int64 {
	var c config
	WithQuotas(q).apply(&c)
	return c.quotas.MemoryBudget
}
