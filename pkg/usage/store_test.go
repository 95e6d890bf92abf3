package usage_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/store"
	"github.com/llmgw/llmgw/pkg/usage"
	"github.com/llmgw/llmgw/pkg/usage/usagetest"
)

var t0 = time.Date(2026, 11, 3, 12, 0, 0, 0, time.UTC)

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// cfgFunc returns a config getter, with a test-friendly store timeout.
func cfgFunc(t testing.TB, yaml string) func() *config.Config {
	cfg := mustConfig(t, yaml+"\nusage: {store_timeout: 5s}\n")
	return func() *config.Config { return cfg }
}

// TestWithStores runs the storage tests on both backends.
func TestWithStores(t *testing.T) {
	usagetest.Run(t, []usagetest.Case{
		{Name: "RecordWrittenOnceWhenRetried", Fn: testRecordOnce},
		{Name: "LostAnswerIsRetriedWithoutDuplicate", Fn: testLostAnswer},
		{Name: "AnonymousAndTTL", Fn: testAnonymousAndTTL},
		{Name: "RollupEqualsSumAndIsStable", Fn: testRollupStable},
		{Name: "ExpiredDayKeepsItsRollup", Fn: testExpiredDay},
		{Name: "Handler", Fn: testHandler},
		{Name: "RollupShowsPromptCacheTokensAndCostPerTeam", Fn: testRollupCacheColumns},
	})
}

func countPartition(t *testing.T, s store.Querier, pk string) int {
	t.Helper()
	n := 0
	if err := s.Query(ctxT(t), pk, "", "", func(store.Item) bool { n++; return true }); err != nil {
		t.Fatal(err)
	}
	return n
}

func sampleRecord(team, id string, at time.Time) *exchange.Record {
	return &exchange.Record{RequestID: id, Time: at, Team: team, Route: "gpt-4.1-mini", Target: "openai/gpt-4.1-mini",
		Provider: "openai", Outcome: "ok", Status: 200, InputTokens: 1000, OutputTokens: 500}
}

func testRecordOnce(t *testing.T, open usagetest.Opener) {
	clk := usagetest.NewClock(t0)
	s := open(t, clk.Now)
	rec := usage.NewRecorder(s, cfgFunc(t, testConfig), nil)
	r := sampleRecord("search", "req_1", t0)
	for i := 0; i < 3; i++ { // the same record written again: a retried write
		if err := rec.Write(ctxT(t), r); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	if n := countPartition(t, s, store.UsagePK("search", t0)); n != 1 {
		t.Fatalf("%d items after three writes of one record, want 1", n)
	}
	it, ok, err := s.Get(ctxT(t), store.UsageKey("search", t0, "req_1"))
	if err != nil || !ok {
		t.Fatalf("get: %v %v", ok, err)
	}
	var back exchange.Record
	if err := usage.DecodeRecord(it, &back); err != nil {
		t.Fatal(err)
	}
	if it.Version != 1 {
		t.Fatalf("record version %d: a repeated write replaced it (want Put IfAbsent, version 1)", it.Version)
	}
	// The cost was filled in from the price table: 1000 x 0.40 + 500 x 1.60 = 1200 / 1e6.
	if back.RequestID != "req_1" || back.Team != "search" || math.Abs(back.CostUSD-0.0012) > 1e-12 {
		t.Fatalf("stored record %+v", back)
	}
}

// lossy lands a Put but reports a timeout, once: the answer was lost.
type lossy struct {
	store.Store
	puts, lost int
}

func (l *lossy) Put(ctx context.Context, it store.Item, c store.Cond) (store.Item, error) {
	l.puts++
	out, err := l.Store.Put(ctx, it, c)
	if err == nil && l.lost == 0 {
		l.lost++
		return store.Item{}, context.DeadlineExceeded
	}
	return out, err
}

func testLostAnswer(t *testing.T, open usagetest.Opener) {
	clk := usagetest.NewClock(t0)
	s := &lossy{Store: open(t, clk.Now)}
	rec := usage.NewRecorder(s, cfgFunc(t, testConfig), nil)
	if err := rec.Write(ctxT(t), sampleRecord("search", "req_2", t0)); err != nil {
		t.Fatalf("write: %v", err)
	}
	if s.puts != 2 {
		t.Fatalf("%d puts, want 2 (the lost answer is retried)", s.puts)
	}
	if n := countPartition(t, s, store.UsagePK("search", t0)); n != 1 {
		t.Fatalf("%d items, want 1", n)
	}
}

func testAnonymousAndTTL(t *testing.T, open usagetest.Opener) {
	clk := usagetest.NewClock(t0)
	s := open(t, clk.Now)
	cfg := cfgFunc(t, testConfig)
	rec := usage.NewRecorder(s, cfg, nil)
	if err := rec.Write(ctxT(t), sampleRecord("", "req_3", t0)); err != nil {
		t.Fatal(err)
	}
	it, ok, err := s.Get(ctxT(t), store.UsageKey(config.AnonymousTeam, t0, "req_3"))
	if err != nil || !ok {
		t.Fatalf("anonymous record not found: %v %v", ok, err)
	}
	if want := t0.Add(90 * 24 * time.Hour); !it.Expires.Equal(want) {
		t.Fatalf("expires %v, want %v (default ttl 90 days)", it.Expires, want)
	}
	clk.Set(t0.Add(90*24*time.Hour + time.Second))
	if _, ok, _ := s.Get(ctxT(t), it.Key); ok {
		t.Fatal("record still there after its ttl")
	}
	// A configured TTL is used.
	cfg2 := mustConfig(t, testConfig+"\nusage: {ttl: 240h}\n")
	rec2 := usage.NewRecorder(s, func() *config.Config { return cfg2 }, nil)
	at := t0.Add(100 * 24 * time.Hour)
	if err := rec2.Write(ctxT(t), sampleRecord("search", "req_4", at)); err != nil {
		t.Fatal(err)
	}
	it, ok, err = s.Get(ctxT(t), store.UsageKey("search", at, "req_4"))
	if err != nil || !ok || !it.Expires.Equal(at.Add(240*time.Hour)) {
		t.Fatalf("configured ttl: %v %v %v", it.Expires, ok, err)
	}
}

// genRecords makes n varied records over the days before t0 (and t0's
// day), some right at midnight.
func genRecords(seed uint64, n int, teams []string) []*exchange.Record {
	rng := rand.New(rand.NewPCG(seed, 7))
	routes := []string{"gpt-4.1-mini", "claude", "nope-unknown"}
	tags := []string{"", "checkout", "browse"}
	outcomes := []string{"ok", "ok", "ok", "rate_limited", "client_cancelled", "unavailable", "budget_exceeded"}
	day0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var out []*exchange.Record
	for i := 0; i < n; i++ {
		var at time.Time
		switch i % 10 {
		case 0:
			at = day0.AddDate(0, 0, rng.IntN(3)) // exactly midnight
		case 1:
			at = day0.AddDate(0, 0, 1+rng.IntN(2)).Add(-time.Nanosecond) // last instant of a day
		default:
			at = day0.Add(time.Duration(rng.Int64N(int64(2*24*time.Hour + 12*time.Hour))))
		}
		r := &exchange.Record{
			RequestID: fmt.Sprintf("req_%06d", i), Time: at, Team: teams[rng.IntN(len(teams))],
			Route: routes[rng.IntN(len(routes))], Tag: tags[rng.IntN(len(tags))], Outcome: outcomes[rng.IntN(len(outcomes))],
			FallbackDepth: rng.IntN(3) / 2, InputTokens: rng.IntN(5000), OutputTokens: rng.IntN(2000),
			CachedTokens: rng.IntN(100), Estimated: rng.IntN(5) == 0, CostUSD: float64(1+rng.IntN(1_000_000)) / 1e7,
			Target: "openai/gpt-4.1-mini", Provider: "openai",
			Attempts: []exchange.Attempt{{Target: "openai/gpt-4.1-mini", Status: 200, LatencyM: 12.5}},
		}
		out = append(out, r)
	}
	return out
}

// expected computes rollups straight from records, independently of the
// Roller's code.
type want struct {
	requests, errors, cancelled, fallbacks, in, out, cached, estimated, costNano int64
	costFloat                                                                    float64
	routes, tags                                                                 map[string]int64 // requests
	routeCost                                                                    map[string]int64
}

func expected(recs []*exchange.Record) map[[2]string]*want {
	m := map[[2]string]*want{}
	for _, r := range recs {
		team := r.Team
		if team == "" {
			team = config.AnonymousTeam
		}
		k := [2]string{team, store.Day(r.Time)}
		w := m[k]
		if w == nil {
			w = &want{routes: map[string]int64{}, tags: map[string]int64{}, routeCost: map[string]int64{}}
			m[k] = w
		}
		w.requests++
		if r.Outcome == "client_cancelled" {
			w.cancelled++
		} else if r.Outcome != "ok" {
			w.errors++
		}
		if r.FallbackDepth > 0 {
			w.fallbacks++
		}
		w.in += int64(r.InputTokens)
		w.out += int64(r.OutputTokens)
		w.cached += int64(r.CachedTokens)
		if r.Estimated {
			w.estimated++
		}
		w.costNano += int64(math.Round(r.CostUSD * 1e9))
		w.costFloat += r.CostUSD
		w.routes[r.Route]++
		w.routeCost[r.Route] += int64(math.Round(r.CostUSD * 1e9))
		if r.Tag != "" {
			w.tags[r.Tag]++
		}
	}
	return m
}

// stored reads every stored rollup of teams for days d0..d1.
func stored(t *testing.T, s store.Querier, teams []string, d0, d1 time.Time) map[[2]string]usage.Rollup {
	t.Helper()
	out := map[[2]string]usage.Rollup{}
	for _, team := range teams {
		err := usage.ReadRollups(ctxT(t), s, team, d0, d1, func(ru usage.Rollup) bool {
			ru.ComputedAt = time.Time{}
			out[[2]string{team, ru.Day}] = ru
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func check(t *testing.T, got map[[2]string]usage.Rollup, exp map[[2]string]*want) {
	t.Helper()
	if len(got) != len(exp) {
		t.Fatalf("%d rollups stored, want %d (one per team-day with records)", len(got), len(exp))
	}
	for k, w := range exp {
		g, ok := got[k]
		if !ok {
			t.Fatalf("no rollup for %v", k)
		}
		if g.Requests != w.requests || g.Errors != w.errors || g.Cancelled != w.cancelled || g.Fallbacks != w.fallbacks ||
			g.InputTokens != w.in || g.OutputTokens != w.out || g.CachedTokens != w.cached || g.Estimated != w.estimated ||
			g.CostNanoUSD != w.costNano {
			t.Fatalf("%v: rollup %+v, want %+v", k, g.Totals, *w)
		}
		if math.Abs(g.CostUSD-w.costFloat) > 1e-6 {
			t.Fatalf("%v: cost %v, records sum to %v", k, g.CostUSD, w.costFloat)
		}
		for route, n := range w.routes {
			if g.Routes[route] == nil || g.Routes[route].Requests != n || g.Routes[route].CostNanoUSD != w.routeCost[route] {
				t.Fatalf("%v: route %s: %+v, want %d requests", k, route, g.Routes[route], n)
			}
		}
		for tag, n := range w.tags {
			if g.Tags[tag] == nil || g.Tags[tag].Requests != n {
				t.Fatalf("%v: tag %s: %+v, want %d", k, tag, g.Tags[tag], n)
			}
		}
		if _, ok := g.Tags[""]; ok {
			t.Fatalf("%v: untagged requests listed as a tag", k)
		}
	}
}

func testRollupStable(t *testing.T, open usagetest.Opener) {
	clk := usagetest.NewClock(t0)
	s := open(t, clk.Now)
	cfg := cfgFunc(t, testConfig)
	rec := usage.NewRecorder(s, cfg, nil)
	teams := []string{"search", "ads", ""}
	recs := genRecords(1, 400, teams)
	for _, r := range recs {
		if err := rec.Write(ctxT(t), r); err != nil {
			t.Fatal(err)
		}
	}
	roller := usage.NewRoller(s, cfg)
	roller.Now = clk.Now
	d1, d3 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 3, 0, 0, 0, 0, time.UTC)
	all := []string{"search", "ads", "ops", config.AnonymousTeam}

	sum, err := roller.Run(ctxT(t), d1, d3)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Records != int64(len(recs)) || sum.TeamDays != 12 || sum.Written != 9 {
		t.Fatalf("summary %+v: want 400 records, 12 team-days, 9 written (ops has none)", sum)
	}
	first := stored(t, s, all, d1, d3)
	check(t, first, expected(recs))

	// Rerun, and overlapping windows: identical rollups.
	clk.Advance(time.Minute)
	for _, w := range [][2]time.Time{{d1, d3}, {d1.AddDate(0, 0, 1), d3}, {d1, d1.AddDate(0, 0, 1)}} {
		if _, err := roller.Run(ctxT(t), w[0], w[1]); err != nil {
			t.Fatal(err)
		}
		if again := stored(t, s, all, d1, d3); !reflect.DeepEqual(again, first) {
			t.Fatalf("rollup changed on a rerun over %s..%s", store.Day(w[0]), store.Day(w[1]))
		}
	}

	// A late record for yesterday (written after the run) is picked up by
	// the next hourly run, which recomputes today and yesterday.
	late := sampleRecord("ads", "req_late", time.Date(2026, 11, 2, 23, 59, 59, 0, time.UTC))
	late.CostUSD = 1.25
	if err := rec.Write(ctxT(t), late); err != nil {
		t.Fatal(err)
	}
	recs = append(recs, late)
	if _, err := roller.RunMode(ctxT(t), usage.Hourly); err != nil {
		t.Fatal(err)
	}
	check(t, stored(t, s, all, d1, d3), expected(recs))

	// The daily close just after midnight recomputes the two days before.
	from, to, _ := usage.Daily.Window(time.Date(2026, 11, 4, 0, 30, 0, 0, time.UTC))
	if store.Day(from) != "2026-11-02" || store.Day(to) != "2026-11-03" {
		t.Fatalf("daily window %s..%s", store.Day(from), store.Day(to))
	}
	if _, _, err := usage.Mode("weekly").Window(t0); err == nil {
		t.Fatal("unknown mode accepted")
	}
}

func testExpiredDay(t *testing.T, open usagetest.Opener) {
	clk := usagetest.NewClock(t0)
	s := open(t, clk.Now)
	cfg := cfgFunc(t, testConfig)
	rec := usage.NewRecorder(s, cfg, nil)
	if err := rec.Write(ctxT(t), sampleRecord("search", "req_x", t0)); err != nil {
		t.Fatal(err)
	}
	roller := usage.NewRoller(s, cfg)
	roller.Now = clk.Now
	if _, written, err := roller.RollupDay(ctxT(t), "search", t0); err != nil || !written {
		t.Fatalf("rollup: %v %v", written, err)
	}
	// An empty day is not written.
	if _, written, err := roller.RollupDay(ctxT(t), "search", t0.AddDate(0, 0, 1)); err != nil || written {
		t.Fatalf("empty day: written=%v err=%v", written, err)
	}
	// 90 days later the records are gone; the rollup must survive a rerun.
	clk.Set(t0.AddDate(0, 0, 91))
	if _, _, err := roller.RollupDay(ctxT(t), "search", t0); !errors.Is(err, usage.ErrExpired) {
		t.Fatalf("rollup of an expired day: %v, want ErrExpired", err)
	}
	got := stored(t, s, []string{"search"}, t0, t0)
	if r := got[[2]string{"search", store.Day(t0)}]; r.Requests != 1 {
		t.Fatalf("rollup after expiry: %+v", r)
	}
}

// testRollupCacheColumns: each team's rollup sums its prompt-cache reads
// and writes and what they cost, priced when the records are written.
func testRollupCacheColumns(t *testing.T, open usagetest.Opener) {
	clk := usagetest.NewClock(t0)
	s := open(t, clk.Now)
	cfg := cfgFunc(t, testConfig+`  "anthropic/claude-opus": {input: 5, output: 25, cached_input: 0.5, cache_write: 6.25, cache_write_1h: 10}
`)
	rec := usage.NewRecorder(s, cfg, nil)
	claude := func(team, id string, read, write, write1h int) *exchange.Record {
		return &exchange.Record{RequestID: id, Time: t0, Team: team, Route: "opus", Target: "anthropic/claude-opus", Provider: "anthropic",
			Outcome: "ok", Status: 200, InputTokens: 10000, OutputTokens: 100, CachedTokens: read, CacheWriteTokens: write, CacheWrite1hTokens: write1h}
	}
	for _, r := range []*exchange.Record{
		claude("search", "r1", 8000, 0, 0),           // reads 8,000 x 0.5
		claude("search", "r2", 0, 6000, 2000),        // writes 4,000 x 6.25 + 2,000 x 10
		claude("ads", "r3", 4000, 1000, 0),           // reads 4,000 x 0.5, writes 1,000 x 6.25
		sampleRecord("ads", "r4", t0.Add(time.Hour)), // no cache
	} {
		if err := rec.Write(ctxT(t), r); err != nil {
			t.Fatal(err)
		}
	}
	roller := usage.NewRoller(s, cfg)
	roller.Now = clk.Now
	if _, err := roller.Run(ctxT(t), t0, t0); err != nil {
		t.Fatal(err)
	}
	got := stored(t, s, []string{"search", "ads"}, t0, t0)
	for _, w := range []struct {
		team                                string
		read, write, write1h, readN, writeN int64
	}{
		{"search", 8000, 6000, 2000, usage.NanoUSD(8000 * 0.5 / 1e6), usage.NanoUSD((4000*6.25 + 2000*10) / 1e6)},
		{"ads", 4000, 1000, 0, usage.NanoUSD(4000 * 0.5 / 1e6), usage.NanoUSD(1000 * 6.25 / 1e6)},
	} {
		ru := got[[2]string{w.team, store.Day(t0)}]
		if ru.CachedTokens != w.read || ru.CacheWriteTokens != w.write || ru.CacheWrite1hTokens != w.write1h ||
			ru.CacheReadNanoUSD != w.readN || ru.CacheWriteNanoUSD != w.writeN {
			t.Errorf("%s: cache read %d write %d (1h %d) costing %d + %d nano-USD; want %d %d (%d) %d + %d", w.team, ru.CachedTokens,
				ru.CacheWriteTokens, ru.CacheWrite1hTokens, ru.CacheReadNanoUSD, ru.CacheWriteNanoUSD, w.read, w.write, w.write1h, w.readN, w.writeN)
		}
		if r := ru.Routes["opus"]; r == nil || r.CacheReadNanoUSD != w.readN {
			t.Errorf("%s: route breakdown %+v", w.team, r)
		}
	}
	// The cost table shows them per team: search wrote 6,000 tokens,
	// reads cost $0.0040 and writes $0.0450.
	rep, err := usage.BuildReport(ctxT(t), s, []string{"search", "ads"}, t0, t0, false)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := rep.WriteTable(&b, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "CACHE WRITE TOKENS  CACHE READ USD  CACHE WRITE USD") ||
		!strings.Contains(b.String(), "6,000          0.0040           0.0450") {
		t.Errorf("cost table:\n%s", b.String())
	}
}
