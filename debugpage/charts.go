package debugpage

import (
	"strconv"
	"strings"
)

// chart geometry, in SVG user units (pixels).
const (
	chartW    = 440
	chartH    = 70
	chartCols = 60 // ten-second columns of the outcome chart
)

// debugCharts are the page's three charts.
type debugCharts struct {
	Rate, P99 lineChart
	Outcomes  stackChart
}

type lineChart struct {
	Title  string
	Max    string // the top of the y axis, as text
	Points string // the polyline, "x,y x,y ..."
	Area   string // the polygon under it
	W, H   int
}

type stackChart struct {
	Title  string
	Max    string
	Rects  []chartRect
	Legend []legendItem
	W, H   int
}

type chartRect struct {
	X, Y, W, H float64
	Fill       string
	Title      string
}

type legendItem struct {
	Class, Name string
	Count       uint64
}

func chartsOf(series []secondStat) debugCharts {
	var c debugCharts
	rates := make([]float64, len(series))
	p99s := make([]float64, len(series))
	for i, s := range series {
		rates[i] = float64(s.Requests)
		p99s[i] = s.P99MS
	}
	c.Rate = lineOf("requests/s", rates, func(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) + "/s" })
	c.P99 = lineOf("p99 latency", p99s, formatMS)
	c.Outcomes = stackOf(series)
	return c
}

func lineOf(title string, vals []float64, label func(float64) string) lineChart {
	top := 0.0
	for _, v := range vals {
		top = max(top, v)
	}
	lc := lineChart{Title: title, Max: label(top), W: chartW, H: chartH}
	if top == 0 {
		top = 1
	}
	var pts strings.Builder
	n := max(len(vals)-1, 1)
	for i, v := range vals {
		x := float64(i) * chartW / float64(n)
		y := chartH - 1 - v/top*(chartH-4)
		if i > 0 {
			pts.WriteByte(' ')
		}
		pts.WriteString(strconv.FormatFloat(x, 'f', 1, 64) + "," + strconv.FormatFloat(y, 'f', 1, 64))
	}
	lc.Points = pts.String()
	lc.Area = "0," + strconv.Itoa(chartH) + " " + lc.Points + " " + strconv.Itoa(chartW) + "," + strconv.Itoa(chartH)
	return lc
}

func stackOf(series []secondStat) stackChart {
	sc := stackChart{Title: "outcomes per 10 s", W: chartW, H: chartH}
	per := max(len(series)/chartCols, 1)
	cols := make([][slotCount]uint64, chartCols)
	var totals [slotCount]uint64
	for i, s := range series {
		c := min(i/per, chartCols-1)
		for k, v := range s.ByOutcome {
			cols[c][k] += v
			totals[k] += v
		}
	}
	var top uint64
	for _, col := range cols {
		var sum uint64
		for _, v := range col {
			sum += v
		}
		top = max(top, sum)
	}
	sc.Max = strconv.FormatUint(top, 10)
	if top == 0 {
		top = 1
	}
	w := float64(chartW) / chartCols
	for ci, col := range cols {
		y := float64(chartH)
		for k, v := range col {
			if v == 0 {
				continue
			}
			h := float64(v) / float64(top) * (chartH - 2)
			y -= h
			sc.Rects = append(sc.Rects, chartRect{
				X: float64(ci) * w, Y: y, W: w - 1, H: h, Fill: slotColors[k],
				Title: slotNames[k] + ": " + strconv.FormatUint(v, 10),
			})
		}
	}
	for k, v := range totals {
		if v > 0 {
			sc.Legend = append(sc.Legend, legendItem{Class: "sw-" + strconv.Itoa(k), Name: slotNames[k], Count: v})
		}
	}
	return sc
}
