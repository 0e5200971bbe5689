package mcpconv

// RequestMethods returns the client-to-server MCP request methods: the
// known values of the method label of the request metrics.
func RequestMethods() []string {
	return []string{
		"initialize", "ping", "server/discover", "subscriptions/listen",
		"tools/list", "tools/call",
		"prompts/list", "prompts/get",
		"resources/list", "resources/templates/list", "resources/read",
		"resources/subscribe", "resources/unsubscribe",
		"logging/setLevel", "completion/complete",
		"tasks/get", "tasks/list", "tasks/result", "tasks/cancel", "tasks/update",
		"skills/list", "skills/get", "resources/directory/read",
	}
}

// ClientMethods returns the server-to-client MCP request methods: the
// known values of the method label of
// mcp_server_pending_client_requests_failed_total.
func ClientMethods() []string {
	return []string{
		"ping", "roots/list", "sampling/createMessage", "elicitation/create",
		"tasks/get", "tasks/list", "tasks/result", "tasks/cancel",
	}
}
