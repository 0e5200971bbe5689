// Command vigil-everything is the Vigil MCP conformance fixture server: it
// exposes every tool, resource, prompt and completion that the official MCP
// conformance suite exercises, with the exact names, arguments and outputs
// the suite expects, in both protocol eras (2025-11-25 sessions and
// 2026-07-28 stateless requests). A few vigil_* tools add what the
// TypeScript SDK interop test needs besides (structured output, roots, a
// resource update, log levels), vigil_weather, a tool with an MCP Apps
// view (ui://vigil-everything/weather), a sample skill set (the skills
// extension, embedded from testdata/skills) and an unlisted dynamic skill,
// skill://reports/daily/SKILL.md.
//
// Usage:
//
//	vigil-everything -stdio
//
// serves one MCP session on standard input and output until the input ends
// or the process gets SIGINT or SIGTERM.
package main
