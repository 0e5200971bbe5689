package protocol

import "strconv"

// Code is a JSON-RPC error code.
type Code int64

// The JSON-RPC 2.0 codes, and the server-defined codes of MCP and Vigil.
const (
	CodeParseError     Code = -32700 // invalid JSON (or not UTF-8)
	CodeInvalidRequest Code = -32600 // valid JSON, but not a valid JSON-RPC request
	CodeMethodNotFound Code = -32601 // unknown method
	CodeInvalidParams  Code = -32602 // bad params, unknown tool
	CodeInternal       Code = -32603 // a bug or a panic: details stay in the logs
	// CodeServerBusy rejects a request over a limit (in-flight requests,
	// concurrent tool calls) or one that arrives while the server drains
	// for shutdown.
	CodeServerBusy Code = -32000
	// CodeRequestTimeout answers a request whose handler ran out of time.
	CodeRequestTimeout Code = -32001
	// CodeResourceNotFound answers resources/read of an unknown URI in the
	// 2025 protocol versions (2026-07-28 uses [CodeInvalidParams]).
	CodeResourceNotFound Code = -32002
	// CodeHeaderMismatch (2026-07-28): the HTTP headers disagree with the
	// body, or a required header is missing.
	CodeHeaderMismatch Code = -32020
	// CodeMissingRequiredClientCapability (2026-07-28): the request needs a
	// capability its client did not declare.
	CodeMissingRequiredClientCapability Code = -32021
	// CodeUnsupportedProtocolVersion (2026-07-28): the request names a
	// protocol version this server does not speak.
	CodeUnsupportedProtocolVersion Code = -32022
	// CodeURLElicitationRequired: the request needs the user to complete a
	// URL-mode elicitation first.
	CodeURLElicitationRequired Code = -32042
)

// String returns the code in decimal ("-32602"), the form of the error_type
// label and attribute.
func (c Code) String() string { return strconv.FormatInt(int64(c), 10) }
