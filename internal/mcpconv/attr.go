package mcpconv

import "go.opentelemetry.io/otel/attribute"

// Attribute keys of the OpenTelemetry semantic conventions for MCP
// (open-telemetry/semantic-conventions-genai, docs/gen-ai/mcp.md, status
// Development). Go's semconv packages dropped the MCP and GenAI keys in
// v1.42 when the conventions moved repositories, so they are declared here;
// generic keys (error.type, network.transport, service.name) come from one
// pinned go.opentelemetry.io/otel/semconv import where they are used.
const (
	// MCPMethodNameKey is the JSON-RPC method: "tools/call", "initialize",
	// "notifications/cancelled", ... (required on every MCP span).
	MCPMethodNameKey = attribute.Key("mcp.method.name")
	// MCPSessionIDKey is the session id (spans only, never a metric label).
	MCPSessionIDKey = attribute.Key("mcp.session.id")
	// MCPProtocolVersionKey is the negotiated MCP protocol version, e.g.
	// "2025-11-25".
	MCPProtocolVersionKey = attribute.Key("mcp.protocol.version")
	// MCPResourceURIKey is the resource URI of resources/read,
	// resources/subscribe and resources/unsubscribe.
	MCPResourceURIKey = attribute.Key("mcp.resource.uri")
	// JSONRPCRequestIDKey is the JSON-RPC request id in string form; absent
	// on notifications.
	JSONRPCRequestIDKey = attribute.Key("jsonrpc.request.id")
	// RPCResponseStatusCodeKey is the JSON-RPC error code of an error
	// response, as a string ("-32602"). The MCP conventions still use this
	// name; core semconv renamed it rpc.status_code.
	RPCResponseStatusCodeKey = attribute.Key("rpc.response.status_code")
	// GenAIToolNameKey is the tool name of tools/call.
	GenAIToolNameKey = attribute.Key("gen_ai.tool.name")
	// GenAIPromptNameKey is the prompt name of prompts/get.
	GenAIPromptNameKey = attribute.Key("gen_ai.prompt.name")
	// GenAIOperationNameKey is the GenAI operation: [OperationExecuteTool]
	// for tools/call.
	GenAIOperationNameKey = attribute.Key("gen_ai.operation.name")
)

// Vigil's own attribute keys, for what the MCP conventions do not cover.
const (
	// CancelCauseKey is why a request's context was cancelled:
	// "client_cancel", "transport_close", "stream_close", "shutdown",
	// "timeout", "upstream_closed" or "other"
	// (the String form of the server's CancelReason).
	CancelCauseKey = attribute.Key("vigil.cancel.cause")
	// DropReasonKey is why a response was not written: "cancelled",
	// "writer_closed", "peer_gone" or "shutdown" (the server's DropReason).
	DropReasonKey = attribute.Key("vigil.drop.reason")
	// OAuthClientIDKey is the OAuth client a request's access token was
	// issued to (its client_id or azp claim), next to semconv user.id for
	// the token's subject; set only when the request was authorized.
	OAuthClientIDKey = attribute.Key("vigil.oauth.client_id")
	// PolicyKey is the policy that decided a tools/call (package
	// middleware/policy): "default" or "tools.NAME".
	PolicyKey = attribute.Key("vigil.policy")
	// PolicyDecisionKey is its decision: "allow" or "deny".
	PolicyDecisionKey = attribute.Key("vigil.policy.decision")
	// OAuthActorsKey is the act chain of a delegated request's token (RFC
	// 8693 §4.1): the subjects of the parties acting on behalf of user.id,
	// outermost (the one acting now) first; set only for a delegated token.
	OAuthActorsKey = attribute.Key("vigil.oauth.actors")
	// UpstreamKey names the upstream MCP server a gateway forwarded a
	// call to (package gateway), as the operator named it.
	UpstreamKey = attribute.Key("vigil.upstream")
	// EndpointKey names the gateway's named endpoint (/mcp/NAME of the
	// operator's catalog) a forwarded request came through; absent for
	// the default endpoint. Its values are the catalog's endpoint names.
	EndpointKey = attribute.Key("vigil.endpoint")
)

// Attribute values besides those shared with the metric labels
// ([ErrorTypeTool] for error.type, [ErrorTypeOther]).
const (
	// ErrorTypeTimeout is the error.type of a server-to-client request that
	// got no answer in time.
	ErrorTypeTimeout = "timeout"
	// OperationExecuteTool is the gen_ai.operation.name of tools/call.
	OperationExecuteTool = "execute_tool"
)

// Span event names.
const (
	// EventCanceled marks the moment a request's context was found cancelled;
	// it carries [CancelCauseKey].
	EventCanceled = "cancelled"
	// EventResponseDropped marks a response that was not written; it carries
	// [DropReasonKey].
	EventResponseDropped = "response_dropped"
)

// ScopeName is the instrumentation scope of the tracers (and meters) Vigil
// obtains from the providers it is given.
const ScopeName = "github.com/vigil-mcp/vigil"
