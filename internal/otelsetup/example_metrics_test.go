package otelsetup_test

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/internal/metrics"
	"github.com/vigil-mcp/vigil/internal/otelsetup"
)

// The Prometheus registry that serves /metrics is also what OTLP pushes:
// ExportMetrics exports MetricProducer's view of it when
// OTEL_METRICS_EXPORTER=otlp (unset, as here, it pushes nothing). The
// producer is called directly below to show the names it exports.
func ExampleMetricProducer() {
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	m := metrics.New(vocabulary())
	reg.MustRegister(m)

	producer := otelsetup.MetricProducer(reg)
	shutdown, _, err := otelsetup.ExportMetrics(ctx,
		otelsetup.WithService("vigil-example", "1.0.0"),
		otelsetup.WithMetricProducer(producer))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = shutdown(ctx) }() // the last push

	m.RequestStarted("tools/call")
	m.RequestFinished(metrics.RequestEnd{
		Method: "tools/call", Tool: "greet", ToolRegistered: true,
		Outcome: mcpconv.OutcomeOK, ErrorType: mcpconv.ErrorTypeTool, Duration: 30 * time.Millisecond,
	})

	sms, err := producer.Produce(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, metric := range sms[0].Metrics {
		switch data := metric.Data.(type) {
		case metricdata.Histogram[float64]:
			for _, dp := range data.DataPoints {
				if dp.Count > 0 && metric.Name == "mcp.server.operation.duration" {
					fmt.Println(metric.Name, metric.Unit, dp.Attributes.Encoded(attribute.DefaultEncoder()), dp.Count)
				}
			}
		case metricdata.Sum[float64]:
			for _, dp := range data.DataPoints {
				if dp.Value > 0 && metric.Name == "mcp.server.requests.finished" {
					fmt.Println(metric.Name, metric.Unit, dp.Attributes.Encoded(attribute.DefaultEncoder()), dp.Value)
				}
			}
		}
	}
	// Output:
	// mcp.server.operation.duration s error.type=tool_error,gen_ai.tool.name=greet,mcp.method.name=tools/call 1
	// mcp.server.requests.finished {request} error.type=tool_error,gen_ai.tool.name=greet,mcp.method.name=tools/call,outcome=ok 1
}
