package protocol

// Quota names the per-caller limit a request or session was refused by. Its
// String form is the quota label of mcp_server_quota_refusals_total, of
// logs and of refusal answers. The zero value is QuotaOther.
type Quota uint8

// The quotas.
const (
	// QuotaOther: any quota outside the kinds below.
	QuotaOther Quota = iota
	// QuotaSessions: the caller holds its most concurrent sessions.
	QuotaSessions
	// QuotaInFlight: the caller has its most requests in flight, over all
	// of its sessions and stateless requests.
	QuotaInFlight
	// QuotaTasks: the caller holds its most tasks.
	QuotaTasks
	// QuotaToolShare: the caller holds its fair share of a tool's
	// concurrency slots.
	QuotaToolShare
	// QuotaRate: the caller is over its request rate.
	QuotaRate
	// QuotaToolRate: the caller is over its rate for one tool.
	QuotaToolRate
	// QuotaBytes: the request bodies the caller's requests in flight hold
	// are at its byte quota.
	QuotaBytes
)

var quotaNames = [...]string{"other", "sessions", "in_flight", "tasks", "tool_share", "rate", "tool_rate", "bytes"}

// String returns the label value, such as "in_flight".
func (q Quota) String() string {
	if int(q) < len(quotaNames) {
		return quotaNames[q]
	}
	return quotaNames[QuotaOther]
}

// MarshalText encodes q as its label, so that JSON logs and documents carry
// the label rather than the number.
func (q Quota) MarshalText() ([]byte, error) { return []byte(q.String()), nil }
