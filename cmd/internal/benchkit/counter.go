package benchkit

import (
	"io"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// SumCounter returns the sum of the samples of the counter family name in
// a Prometheus text exposition, and whether the family is there.
func SumCounter(exposition io.Reader, name string) (int64, bool, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(exposition)
	if err != nil {
		return 0, false, err
	}
	f, ok := families[name]
	if !ok {
		return 0, false, nil
	}
	var sum float64
	for _, m := range f.GetMetric() {
		sum += m.GetCounter().GetValue()
	}
	return int64(sum), true, nil
}
