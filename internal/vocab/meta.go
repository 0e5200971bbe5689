package vocab

// MetaPrefix begins every _meta key the protocol reserves for itself.
const MetaPrefix = "io.modelcontextprotocol/"

// MetaProgressToken is the _meta key of a request's progress token, in
// every protocol version.
const MetaProgressToken = "progressToken"

// The _meta keys of a 2026-07-28 request and result.
const (
	MetaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	MetaClientInfo         = "io.modelcontextprotocol/clientInfo"
	MetaLogLevel           = "io.modelcontextprotocol/logLevel"
	MetaServerInfo         = "io.modelcontextprotocol/serverInfo"
)

// MetaSubscriptionID tags every notification sent on a
// subscriptions/listen stream (2026-07-28).
const MetaSubscriptionID = "io.modelcontextprotocol/subscriptionId"

// MetaRelatedTask is the _meta key that ties a 2025-11-25 message to its
// task: {"taskId": id}.
const MetaRelatedTask = "io.modelcontextprotocol/related-task"
