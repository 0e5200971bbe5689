// Package mcpconv holds the names Vigil's telemetry is spelled with: the
// Prometheus metric and label names, the values of the labels with a
// fixed set (outcomes, error types, message kinds), the OpenTelemetry
// attribute keys and span event names, and how each metric is named over
// OTLP. They are the vocabulary that the collector (package telemetry),
// the middleware, the live page, cmd/vigil and the tests of the
// dashboards and alert rules share; users read them in the metrics and
// spans, not in code, so they are no part of the public API.
package mcpconv
