package otelsetup

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
)

// countingExporter records the exports it is given.
type countingExporter struct {
	mu       sync.Mutex
	exports  []*metricdata.ResourceMetrics
	shutdown int
}

func (*countingExporter) Temporality(k sdkmetric.InstrumentKind) metricdata.Temporality {
	return sdkmetric.DefaultTemporalitySelector(k)
}

func (*countingExporter) Aggregation(k sdkmetric.InstrumentKind) sdkmetric.Aggregation {
	return sdkmetric.DefaultAggregationSelector(k)
}

func (e *countingExporter) Export(_ context.Context, rm *metricdata.ResourceMetrics) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.exports = append(e.exports, rm)
	return nil
}

func (*countingExporter) ForceFlush(context.Context) error { return nil }

func (e *countingExporter) Shutdown(context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.shutdown++
	return nil
}

func (e *countingExporter) count() (exports, shutdowns int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.exports), e.shutdown
}

// oneMetric produces one metric at each call.
type oneMetric struct{}

func (oneMetric) Produce(context.Context) ([]metricdata.ScopeMetrics, error) {
	return []metricdata.ScopeMetrics{{Metrics: []metricdata.Metrics{{Name: "m"}}}}, nil
}

// TestPeriodicExport: the producers' metrics are exported once per
// interval, with the resource, and once more at shutdown, which shuts the
// exporter down once however often it is called.
func TestPeriodicExport(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		exp := &countingExporter{}
		res := resource.NewSchemaless()
		p := startPeriodicExport(exp, []sdkmetric.Producer{oneMetric{}}, res, time.Minute, time.Second)
		synctest.Wait()
		n, _ := exp.count()
		assert.Equal(t, 0, n, "nothing before the first period")
		time.Sleep(time.Minute)
		synctest.Wait()
		n, _ = exp.count()
		assert.Equal(t, 1, n, "one export after a period")
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		n, _ = exp.count()
		assert.Equal(t, 3, n, "one export per period")

		require.NoError(t, p.shutdown(t.Context()))
		require.NoError(t, p.shutdown(t.Context()))
		n, down := exp.count()
		assert.Equal(t, 4, n, "a last export at shutdown")
		assert.Equal(t, 1, down, "the exporter shut down once")
		assert.Same(t, res, exp.exports[0].Resource)
		assert.Equal(t, "m", exp.exports[0].ScopeMetrics[0].Metrics[0].Name)
	})
}

// TestExportPeriod: the interval and timeout come from the environment in
// milliseconds; what is not a positive number that fits is the default.
func TestExportPeriod(t *testing.T) {
	for _, tc := range []struct {
		interval, timeout string
		wantI, wantT      time.Duration
	}{
		{"", "", defaultExportInterval, defaultExportTimeout},
		{"1500", "250", 1500 * time.Millisecond, 250 * time.Millisecond},
		{"-1", "x", defaultExportInterval, defaultExportTimeout},
		{"0", "99999999999999999", defaultExportInterval, defaultExportTimeout},
	} {
		t.Setenv("OTEL_METRIC_EXPORT_INTERVAL", tc.interval)
		t.Setenv("OTEL_METRIC_EXPORT_TIMEOUT", tc.timeout)
		i, to := exportPeriod()
		assert.Equal(t, tc.wantI, i, tc.interval)
		assert.Equal(t, tc.wantT, to, tc.timeout)
	}
}
