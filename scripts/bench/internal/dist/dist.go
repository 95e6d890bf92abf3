// Package dist summarises benchmark samples the one way every bench tool
// writes them: exact nearest-rank quantiles, in microseconds.
package dist

import (
	"math"
	"slices"
	"time"
)

// Dist summarises a sample, in microseconds.
type Dist struct {
	N    int     `json:"n"`
	Min  float64 `json:"min_us"`
	P50  float64 `json:"p50_us"`
	P90  float64 `json:"p90_us"`
	P99  float64 `json:"p99_us"`
	Mean float64 `json:"mean_us"`
	Max  float64 `json:"max_us"`
}

// Of sorts d in place and summarises it (exact nearest-rank quantiles).
func Of(d []time.Duration) Dist {
	if len(d) == 0 {
		return Dist{}
	}
	slices.Sort(d)
	var sum time.Duration
	for _, v := range d {
		sum += v
	}
	q := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(d)))) - 1
		return US(d[max(0, min(i, len(d)-1))])
	}
	return Dist{N: len(d), Min: US(d[0]), P50: q(0.50), P90: q(0.90), P99: q(0.99),
		Mean: US(sum / time.Duration(len(d))), Max: US(d[len(d)-1])}
}

// US is d in microseconds, rounded to 0.01.
func US(d time.Duration) float64 { return math.Round(float64(d.Nanoseconds())/10) / 100 }
