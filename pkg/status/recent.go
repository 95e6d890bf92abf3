package status

import (
	"sort"
	"sync"
	"time"

	"github.com/llmgw/llmgw/pkg/exchange"
)

// recentSize is how many attempts the status page remembers per target.
const recentSize = 256

// RecentWindow is how far back the page's error categories and times to
// first token look.
const RecentWindow = 15 * time.Minute

// sample is one upstream attempt of a target.
type sample struct {
	at       time.Time
	category string  // "" on success
	ttftMs   float64 // a streamed success's time to first token; 0 if none
}

// Recent remembers this instance's recent attempts per target (a ring of
// recentSize each): their error categories and times to first token. It
// holds no content and no key.
type Recent struct {
	mu      sync.Mutex
	targets map[string]*ring
}

type ring struct {
	s    [recentSize]sample
	next int
	n    int
}

// NewRecent returns an empty Recent.
func NewRecent() *Recent { return &Recent{targets: map[string]*ring{}} }

// Observe records a finished request's upstream attempts (skipped targets
// and stage calls left out).
func (r *Recent) Observe(rec *exchange.Record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range rec.Attempts {
		at := &rec.Attempts[i]
		if at.Skipped != "" || at.Stage != "" || at.Target == "" {
			continue
		}
		s := sample{at: at.Start, category: string(at.Category)}
		if s.at.IsZero() {
			s.at = rec.Time
		}
		if at.Category == "" && rec.Stream {
			s.ttftMs = at.LatencyM
		}
		rg := r.targets[at.Target]
		if rg == nil {
			if len(r.targets) >= maxTargets {
				continue
			}
			rg = &ring{}
			r.targets[at.Target] = rg
		}
		rg.s[rg.next] = s
		rg.next = (rg.next + 1) % recentSize
		rg.n = min(rg.n+1, recentSize)
	}
}

// maxTargets bounds the targets Recent tracks.
const maxTargets = 512

// TargetRecent is what a target did lately, on this instance.
type TargetRecent struct {
	// Attempts counts the attempts in the window; Errors those that
	// failed, by category.
	Attempts int            `json:"attempts"`
	Errors   map[string]int `json:"errors"`
	// TTFTP50Ms and TTFTP95Ms are the median and 95th percentile time to
	// first token of its streamed successes (0: none).
	TTFTP50Ms float64 `json:"ttft_p50_ms"`
	TTFTP95Ms float64 `json:"ttft_p95_ms"`
	// TTFTSamples counts the streamed successes they are computed from.
	TTFTSamples int `json:"ttft_samples"`
}

// Target summarizes target's attempts since now-RecentWindow.
func (r *Recent) Target(target string, now time.Time) TargetRecent {
	out := TargetRecent{Errors: map[string]int{}}
	r.mu.Lock()
	rg := r.targets[target]
	var ss []sample
	if rg != nil {
		ss = make([]sample, 0, rg.n)
		for i := 0; i < rg.n; i++ {
			ss = append(ss, rg.s[i])
		}
	}
	r.mu.Unlock()
	var ttft []float64
	for _, s := range ss {
		if now.Sub(s.at) > RecentWindow {
			continue
		}
		out.Attempts++
		if s.category != "" {
			out.Errors[s.category]++
		} else if s.ttftMs > 0 {
			ttft = append(ttft, s.ttftMs)
		}
	}
	sort.Float64s(ttft)
	out.TTFTSamples = len(ttft)
	out.TTFTP50Ms, out.TTFTP95Ms = quantile(ttft, 0.50), quantile(ttft, 0.95)
	return out
}

// quantile is the nearest-rank quantile of sorted values (0 for none).
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.999999) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}
