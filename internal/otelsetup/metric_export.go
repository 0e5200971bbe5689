package otelsetup

import (
	"context"
	"errors"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
)

// The default period and bound of an export, as the OpenTelemetry
// environment specification sets them (OTEL_METRIC_EXPORT_INTERVAL,
// OTEL_METRIC_EXPORT_TIMEOUT).
const (
	defaultExportInterval = 60 * time.Second
	defaultExportTimeout  = 30 * time.Second
)

// periodicExport pushes what its producers produce to its exporter every
// interval, and once more when it stops: the part of the SDK's periodic
// reader that a Vigil server uses. The metrics come from the Prometheus
// registry through producers, never from instruments of a meter provider,
// so the SDK's meter provider (its aggregation pipelines, a large part of
// every program that links Vigil: docs/performance.md) is not linked.
type periodicExport struct {
	exp       sdkmetric.Exporter
	producers []sdkmetric.Producer
	res       *resource.Resource
	timeout   time.Duration // of one export
	stop      chan struct{}
	done      chan struct{}
	once      sync.Once
	mu        sync.Mutex // one export at a time
}

// startPeriodicExport starts exporting every interval.
func startPeriodicExport(exp sdkmetric.Exporter, producers []sdkmetric.Producer, res *resource.Resource, interval, timeout time.Duration) *periodicExport {
	p := &periodicExport{exp: exp, producers: producers, res: res, timeout: timeout, stop: make(chan struct{}), done: make(chan struct{})}
	go p.run(interval)
	return p
}

func (p *periodicExport) run(interval time.Duration) {
	defer close(p.done)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-tick.C:
			ctx, cancel := context.WithTimeout(context.Background(), p.timeout)
			if err := p.export(ctx); err != nil {
				otel.Handle(err) // as the SDK's periodic reader reports a failed export
			}
			cancel()
		}
	}
}

// export collects every producer's metrics and exports them, when there
// are any.
func (p *periodicExport) export(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	rm := &metricdata.ResourceMetrics{Resource: p.res}
	var errs []error
	for _, prod := range p.producers {
		sms, err := prod.Produce(ctx)
		errs = append(errs, err)
		rm.ScopeMetrics = append(rm.ScopeMetrics, sms...)
	}
	if len(rm.ScopeMetrics) > 0 {
		errs = append(errs, p.exp.Export(ctx, rm))
	}
	return errors.Join(errs...)
}

// shutdown stops the period, exports a last time and shuts the exporter
// down, within ctx; a second call returns nil.
func (p *periodicExport) shutdown(ctx context.Context) error {
	var err error
	p.once.Do(func() {
		close(p.stop)
		<-p.done
		err = errors.Join(p.export(ctx), p.exp.Shutdown(ctx))
	})
	return err
}

// exportPeriod reads OTEL_METRIC_EXPORT_INTERVAL and
// OTEL_METRIC_EXPORT_TIMEOUT (milliseconds); an unset, invalid,
// non-positive or overflowing value means the default, as in the SDK.
func exportPeriod() (interval, timeout time.Duration) {
	ms := func(name string, def time.Duration) time.Duration {
		n, err := strconv.ParseInt(strings.TrimSpace(os.Getenv(name)), 10, 64)
		if err != nil || n <= 0 || n > int64(math.MaxInt64/time.Millisecond) {
			return def
		}
		return time.Duration(n) * time.Millisecond
	}
	return ms("OTEL_METRIC_EXPORT_INTERVAL", defaultExportInterval), ms("OTEL_METRIC_EXPORT_TIMEOUT", defaultExportTimeout)
}
