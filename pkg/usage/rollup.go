// Slightly over 400 lines: the rollup (partition scan, idempotent totals,
// late records) reads best as one file.

package usage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/store"
)

// MaxBreakdown caps how many distinct routes (and, separately, tags) one
// team-day rollup keeps; the rest are summed under [OtherKey]. Route names
// and tags come from clients (a request for an unknown model is still
// recorded), so without a cap a rollup item could outgrow DynamoDB's 400 KB.
// At the cap a rollup is about 150 KB.
const MaxBreakdown = 256

// OtherKey collects the routes or tags beyond [MaxBreakdown], and those
// whose name is longer than [MaxBreakdownName].
const OtherKey = "_other"

// MaxBreakdownName is the longest route or tag name a rollup keeps under
// its own name (the gateway refuses longer model names with 400, so only a
// record written by an older or foreign writer can carry one). With
// MaxBreakdown it bounds a rollup item: 2 x 257 entries of at most 256
// bytes of name and their totals come to about 230 KB, under DynamoDB's
// 400 KB, so one oversize record can never make a team-day unwritable.
const MaxBreakdownName = 256

// Outcome names used by the rollup.
const (
	OutcomeOK        = "ok"
	OutcomeCancelled = "client_cancelled"
)

// Totals are summed usage.
type Totals struct {
	Requests int64 `json:"requests"`
	// Errors counts requests whose outcome is neither ok nor
	// client_cancelled (refusals by limits included).
	Errors int64 `json:"errors"`
	// Cancelled counts requests the client abandoned.
	Cancelled int64 `json:"cancelled"`
	// Fallbacks counts requests served (or last tried) past the primary.
	Fallbacks        int64 `json:"fallbacks"`
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	CachedTokens     int64 `json:"cached_tokens"`
	CacheWriteTokens int64 `json:"cache_write_tokens"`
	// Estimated counts requests whose tokens are estimates.
	Estimated int64 `json:"estimated"`
	// CostNanoUSD is the exact sum of the records' costs in nano-dollars.
	CostNanoUSD int64 `json:"cost_nano_usd"`
	// CostUSD is CostNanoUSD in USD, for reading.
	CostUSD float64 `json:"cost_usd"`
	// CacheWrite1hTokens is the part of CacheWriteTokens written with a
	// 1-hour lifetime.
	CacheWrite1hTokens int64 `json:"cache_write_1h_tokens,omitempty"`
	// CacheReadNanoUSD and CacheWriteNanoUSD are the parts of CostNanoUSD
	// paid for prompt-cache reads and writes (Record.CacheReadCostUSD,
	// CacheWriteCostUSD); CacheReadUSD and CacheWriteUSD the same in USD.
	CacheReadNanoUSD  int64   `json:"cache_read_nano_usd,omitempty"`
	CacheWriteNanoUSD int64   `json:"cache_write_nano_usd,omitempty"`
	CacheReadUSD      float64 `json:"cache_read_usd,omitempty"`
	CacheWriteUSD     float64 `json:"cache_write_usd,omitempty"`
	// CacheHits counts requests answered from the response cache (no
	// upstream call, cost 0).
	CacheHits int64 `json:"cache_hits,omitempty"`
	// SavedNanoUSD is what the cache hits cost when their answers were
	// generated, in nano-dollars: the spend the cache saved.
	SavedNanoUSD int64 `json:"saved_nano_usd,omitempty"`
	// SavedUSD is SavedNanoUSD in USD, for reading.
	SavedUSD float64 `json:"saved_usd,omitempty"`
}

// add counts one record.
func (t *Totals) add(r *exchange.Record) {
	t.Requests++
	switch r.Outcome {
	case OutcomeOK:
	case OutcomeCancelled:
		t.Cancelled++
	default:
		t.Errors++
	}
	if r.FallbackDepth > 0 {
		t.Fallbacks++
	}
	t.InputTokens += int64(r.InputTokens)
	t.OutputTokens += int64(r.OutputTokens)
	t.CachedTokens += int64(r.CachedTokens)
	t.CacheWriteTokens += int64(r.CacheWriteTokens)
	t.CacheWrite1hTokens += int64(r.CacheWrite1hTokens)
	t.CacheReadNanoUSD += NanoUSD(r.CacheReadCostUSD)
	t.CacheWriteNanoUSD += NanoUSD(r.CacheWriteCostUSD)
	t.CacheReadUSD, t.CacheWriteUSD = USD(t.CacheReadNanoUSD), USD(t.CacheWriteNanoUSD)
	if r.Estimated {
		t.Estimated++
	}
	t.CostNanoUSD += NanoUSD(r.CostUSD)
	t.CostUSD = USD(t.CostNanoUSD)
	if r.ResponseCache == "hit" {
		t.CacheHits++
		t.SavedNanoUSD += NanoUSD(r.SavedCostUSD)
		t.SavedUSD = USD(t.SavedNanoUSD)
	}
}

// Merge adds o into t.
func (t *Totals) Merge(o Totals) {
	t.Requests += o.Requests
	t.Errors += o.Errors
	t.Cancelled += o.Cancelled
	t.Fallbacks += o.Fallbacks
	t.InputTokens += o.InputTokens
	t.OutputTokens += o.OutputTokens
	t.CachedTokens += o.CachedTokens
	t.CacheWriteTokens += o.CacheWriteTokens
	t.CacheWrite1hTokens += o.CacheWrite1hTokens
	t.CacheReadNanoUSD += o.CacheReadNanoUSD
	t.CacheWriteNanoUSD += o.CacheWriteNanoUSD
	t.CacheReadUSD, t.CacheWriteUSD = USD(t.CacheReadNanoUSD), USD(t.CacheWriteNanoUSD)
	t.Estimated += o.Estimated
	t.CostNanoUSD += o.CostNanoUSD
	t.CostUSD = USD(t.CostNanoUSD)
	t.CacheHits += o.CacheHits
	t.SavedNanoUSD += o.SavedNanoUSD
	t.SavedUSD = USD(t.SavedNanoUSD)
}

// Rollup is the aggregated usage of one team for one UTC day.
type Rollup struct {
	Team string `json:"team"`
	Day  string `json:"day"` // yyyy-mm-dd
	Totals
	// Outcomes counts requests by outcome ("ok", a category, "client_cancelled").
	Outcomes map[string]int64 `json:"outcomes,omitempty"`
	// Routes and Tags break the totals down (untagged requests are not in
	// Tags); at most MaxBreakdown entries each plus OtherKey.
	Routes map[string]*Totals `json:"routes,omitempty"`
	Tags   map[string]*Totals `json:"tags,omitempty"`
	// ComputedAt is when the rollup was computed.
	ComputedAt time.Time `json:"computed_at"`
}

func (r *Rollup) add(rec *exchange.Record) {
	r.Totals.add(rec)
	if r.Outcomes == nil {
		r.Outcomes, r.Routes, r.Tags = map[string]int64{}, map[string]*Totals{}, map[string]*Totals{}
	}
	r.Outcomes[boundedOutcome(rec.Outcome)]++
	bucket(r.Routes, rec.Route).add(rec)
	if rec.Tag != "" {
		bucket(r.Tags, rec.Tag).add(rec)
	}
}

// boundedOutcome keeps the outcome map small even if a record was forged.
func boundedOutcome(o string) string {
	if len(o) > 32 {
		return OtherKey
	}
	return o
}

// bucket returns m[name], creating it while fewer than MaxBreakdown
// entries exist, else m[OtherKey]; a name over MaxBreakdownName always
// goes to m[OtherKey].
func bucket(m map[string]*Totals, name string) *Totals {
	if len(name) > MaxBreakdownName {
		name = OtherKey
	}
	if t, ok := m[name]; ok {
		return t
	}
	if len(m) >= MaxBreakdown {
		name = OtherKey
		if t, ok := m[name]; ok {
			return t
		}
	}
	t := &Totals{}
	m[name] = t
	return t
}

// RollupStore is what the Roller needs: Query over usage partitions, Put
// for rollup items.
type RollupStore interface {
	store.Querier
	store.Putter
}

// Roller computes per-team per-day rollups from usage records. Each
// team-day is recomputed from scratch (one streaming Query over its usage
// partition, constant memory whatever the number of records) and written
// with Put Always, so reruns and overlapping windows give the same result
// and late records are picked up by the next run. Create it with NewRoller.
type Roller struct {
	store  RollupStore
	config func() *config.Config
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Log receives per-team-day failures (default slog.Default()).
	Log *slog.Logger
	// Workers is how many team-days are computed at once (default 4).
	Workers int
	// QueryTimeout bounds one team-day (default 5m).
	QueryTimeout time.Duration
}

// NewRoller returns a Roller over st; cfg returns the config in force, whose
// teams (plus config.AnonymousTeam) are the teams rolled up.
func NewRoller(st RollupStore, cfg func() *config.Config) *Roller {
	return &Roller{store: st, config: cfg, Now: time.Now, Log: slog.Default(), Workers: 4, QueryTimeout: 5 * time.Minute}
}

// Teams returns the teams a run covers: the configured teams and
// config.AnonymousTeam. A team removed from the config is no longer rolled
// up (mark it disabled instead, to keep its history accruing).
func (r *Roller) Teams() []string {
	return append(r.config().TeamNames(), config.AnonymousTeam)
}

// Compute aggregates the records of one team-day without writing anything.
func (r *Roller) Compute(ctx context.Context, team string, day time.Time) (Rollup, error) {
	day = dayStart(day)
	out := Rollup{Team: team, Day: store.Day(day), ComputedAt: r.Now().UTC()}
	var rec exchange.Record
	var bad int
	var badErr error
	err := r.store.Query(ctx, store.UsagePK(team, day), "", "", func(it store.Item) bool {
		if err := DecodeRecord(it, &rec); err != nil {
			bad, badErr = bad+1, err // skip it: one bad item must not stop the day
			return true
		}
		out.add(&rec)
		return true
	})
	if bad > 0 {
		r.Log.LogAttrs(ctx, slog.LevelWarn, "rollup skipped undecodable usage records", slog.String("team", team),
			slog.String("day", out.Day), slog.Int("count", bad), slog.Any("last_error", badErr))
	}
	return out, err
}

// ErrExpired is returned for a day whose oldest usage records may already
// have expired (usage.ttl): recomputing it would undercount, so its stored
// rollup is kept.
var ErrExpired = errors.New("usage: the day's records may have expired; its rollup is kept")

// RollupDay recomputes one team-day and stores it. A day without records
// is not written (records are never deleted, only expire, so an empty day
// never replaces a real rollup), and written reports whether it was.
func (r *Roller) RollupDay(ctx context.Context, team string, day time.Time) (ru Rollup, written bool, err error) {
	day = dayStart(day)
	if ttl := r.config().Usage.TTL.D(); ttl > 0 && !r.Now().Before(day.Add(ttl)) {
		return Rollup{Team: team, Day: store.Day(day)}, false, ErrExpired
	}
	if r.QueryTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.QueryTimeout)
		defer cancel()
	}
	ru, err = r.Compute(ctx, team, day)
	if err != nil || ru.Requests == 0 {
		return ru, false, err
	}
	it, err := rollupItem(&ru)
	if err != nil {
		return ru, false, err
	}
	if _, err := r.store.Put(ctx, it, store.Always()); err != nil {
		return ru, false, fmt.Errorf("usage: write rollup %s: %w", it.Key, err)
	}
	return ru, true, nil
}

// rollupItem encodes a rollup: headline totals as Nums (readable in the
// DynamoDB console), everything as JSON in Data.
func rollupItem(ru *Rollup) (store.Item, error) {
	data, err := json.Marshal(ru)
	if err != nil {
		return store.Item{}, err
	}
	day, err := time.Parse(time.DateOnly, ru.Day)
	if err != nil {
		return store.Item{}, err
	}
	return store.Item{
		Key: store.RollupKey(ru.Team, day),
		Nums: map[string]float64{
			"requests": float64(ru.Requests), "errors": float64(ru.Errors), "fallbacks": float64(ru.Fallbacks),
			"input_tokens": float64(ru.InputTokens), "output_tokens": float64(ru.OutputTokens),
			"cached_tokens": float64(ru.CachedTokens), "cost_nano_usd": float64(ru.CostNanoUSD),
			"cache_write_tokens": float64(ru.CacheWriteTokens), "cache_read_nano_usd": float64(ru.CacheReadNanoUSD),
			"cache_write_nano_usd": float64(ru.CacheWriteNanoUSD),
		},
		Strs: map[string]string{"team": ru.Team, "day": ru.Day},
		Data: data,
	}, nil
}

// DecodeRollup reads a stored rollup item.
func DecodeRollup(it store.Item) (Rollup, error) {
	var ru Rollup
	if err := json.Unmarshal(it.Data, &ru); err != nil {
		return ru, fmt.Errorf("usage: decode rollup %s: %w", it.Key, err)
	}
	return ru, nil
}

// RunSummary reports a run.
type RunSummary struct {
	From     string `json:"from"`
	To       string `json:"to"`
	Teams    int    `json:"teams"`
	TeamDays int    `json:"team_days"` // team-days examined
	Written  int    `json:"written"`   // rollups written (days with records)
	Records  int64  `json:"records"`   // usage records read
	Skipped  int    `json:"skipped"`   // days past usage.ttl, kept as they are
	Failed   int    `json:"failed"`
	// Elapsed is the wall time of the run.
	Elapsed time.Duration `json:"elapsed_ns"`
}

// Run recomputes every team-day from the day of from to the day of to,
// both included, for every team of [Roller.Teams]. Failures of single
// team-days are logged and counted; the error joins them.
func (r *Roller) Run(ctx context.Context, from, to time.Time) (RunSummary, error) {
	start := time.Now()
	from, to = dayStart(from), dayStart(to)
	teams := r.Teams()
	sum := RunSummary{From: store.Day(from), To: store.Day(to), Teams: len(teams)}
	if to.Before(from) {
		return sum, fmt.Errorf("usage: rollup range %s..%s is empty", sum.From, sum.To)
	}
	type job struct {
		team string
		day  time.Time
	}
	jobs := make(chan job)
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	workers := max(r.Workers, 1)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				ru, written, err := r.RollupDay(ctx, j.team, j.day)
				mu.Lock()
				sum.TeamDays++
				sum.Records += ru.Requests
				switch {
				case errors.Is(err, ErrExpired):
					sum.Skipped++
				case err != nil:
					sum.Failed++
					errs = append(errs, fmt.Errorf("%s %s: %w", j.team, store.Day(j.day), err))
					r.Log.LogAttrs(ctx, slog.LevelError, "rollup failed", slog.String("team", j.team),
						slog.String("day", store.Day(j.day)), slog.Any("error", err))
				case written:
					sum.Written++
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for d := from; !d.After(to); d = d.AddDate(0, 0, 1) {
		for _, team := range teams {
			select {
			case jobs <- job{team, d}:
			case <-ctx.Done():
				break feed
			}
		}
	}
	close(jobs)
	wg.Wait()
	sum.Elapsed = time.Since(start)
	if err := ctx.Err(); err != nil {
		errs = append(errs, err)
	}
	return sum, errors.Join(errs...)
}

// Mode is a scheduled run's kind.
type Mode string

// The scheduled modes. Hourly recomputes today and yesterday (records of
// requests that ended after midnight, or were written late, land in
// yesterday's partition by their start time); Daily, the close, recomputes
// the two days before today.
const (
	Hourly Mode = "hourly"
	Daily  Mode = "daily"
)

// Window returns the days a scheduled run of mode m at now covers.
func (m Mode) Window(now time.Time) (from, to time.Time, err error) {
	today := dayStart(now)
	switch m {
	case Hourly, "":
		return today.AddDate(0, 0, -1), today, nil
	case Daily:
		return today.AddDate(0, 0, -2), today.AddDate(0, 0, -1), nil
	}
	return time.Time{}, time.Time{}, fmt.Errorf("usage: unknown rollup mode %q (want hourly or daily)", m)
}

// RunMode runs a scheduled rollup (see [Mode.Window]).
func (r *Roller) RunMode(ctx context.Context, m Mode) (RunSummary, error) {
	from, to, err := m.Window(r.Now())
	if err != nil {
		return RunSummary{}, err
	}
	return r.Run(ctx, from, to)
}

// Loop runs mode m every interval until ctx ends (local mode: the gateway
// keeps today's rollups fresh without a scheduler). Errors are logged.
func (r *Roller) Loop(ctx context.Context, m Mode, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if _, err := r.RunMode(ctx, m); err != nil && ctx.Err() == nil {
			r.Log.LogAttrs(ctx, slog.LevelWarn, "rollup run failed", slog.Any("error", err))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sortedNames returns a map's keys, sorted.
func sortedNames[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
