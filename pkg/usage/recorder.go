package usage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/store"
)

// writeAttempts is how many times the Recorder tries one write. Retrying is
// safe: the write is a Put IfAbsent, so a retry after a write that did land
// (but whose answer was lost) finds it and stops.
const writeAttempts = 3

// maxStoreTimeout is the longest usage.store_timeout (pkg/config).
const maxStoreTimeout = 10 * time.Second

// spillReserve is the time a record's retries leave before the context's
// deadline (the request's: on Lambda, the invocation's) for the spill.
const spillReserve = 500 * time.Millisecond

// errStoreDown is why a record goes straight to the spill: a write failed
// less than a second ago.
var errStoreDown = errors.New("usage: the store failed moments ago")

// Recorder persists usage records: exactly one item per request, written
// with Put IfAbsent on store.UsageKey(team, time, requestID), so a retried
// or repeated write never duplicates a record. Create it with NewRecorder.
//
// A record the store does not take - its attempts failed or timed out
// within the request's remaining time - goes to the Spill when one is set,
// and [Recorder.Drain] writes it later; for a second after a failure,
// records are spilled without trying the store first, so an outage does
// not hold every request for its retries.
type Recorder struct {
	store  store.Putter
	config func() *config.Config
	log    *slog.Logger
	call   *store.Caller
	warn   spillWarn

	// Spill, when set, keeps the records the store did not take (set it
	// before the first Record).
	Spill Spill
}

// NewRecorder returns a Recorder writing to p. cfg returns the config in
// force (for usage.ttl, usage.store_timeout and the price table); log
// receives write failures (nil: slog.Default()).
func NewRecorder(p store.Putter, cfg func() *config.Config, log *slog.Logger) *Recorder {
	if log == nil {
		log = slog.Default()
	}
	r := &Recorder{store: p, config: cfg, log: log}
	// Each attempt is bounded by its own context (usage.store_timeout, and
	// the request's deadline less spillReserve), even when the store
	// ignores it; the Caller adds the store's health and the cap on calls
	// stuck past their deadline.
	r.call = store.NewCaller(store.CallerOptions{Component: "usage", Timeout: maxStoreTimeout})
	return r
}

// Record stores rec, logging (never returning) a failure: its signature is
// server.Options.Record. The server calls it once per request with a
// context that survives the client's disconnect and ends before the
// request's own deadline. A record the store does not take is spilled
// (see Recorder); only when the spill fails too is it lost, and logged
// as "usage record not stored".
func (r *Recorder) Record(ctx context.Context, rec *exchange.Record) {
	cfg := r.config()
	it, err := recordItem(cfg, rec)
	if err == nil {
		err = r.write(ctx, cfg, it, true)
	}
	if err == nil {
		return
	}
	if r.Spill != nil && !errors.Is(err, store.ErrInvalid) {
		serr := r.Spill.Spill(ctx, it.Data)
		if serr == nil {
			if ok, n := r.warn.allow(time.Now()); ok {
				r.log.LogAttrs(ctx, slog.LevelWarn, "usage store unavailable; record spilled, to be drained into the store",
					slog.String("request_id", rec.RequestID), slog.String("trace_id", rec.TraceID), slog.String("team", rec.Team), slog.Any("error", err), slog.Int("suppressed", n))
			}
			return
		}
		err = errors.Join(err, serr)
	}
	r.log.LogAttrs(ctx, slog.LevelError, "usage record not stored",
		slog.String("request_id", rec.RequestID), slog.String("trace_id", rec.TraceID), slog.String("team", rec.Team), slog.Any("error", err))
}

// Write stores rec and reports failure. Writing a record that is already
// stored (same team, time and request id) is a no-op that succeeds. A
// record without a team is stored under config.AnonymousTeam; its cost is
// computed from the price table when the record carries none.
func (r *Recorder) Write(ctx context.Context, rec *exchange.Record) error {
	cfg := r.config()
	it, err := recordItem(cfg, rec)
	if err != nil {
		return err
	}
	return r.write(ctx, cfg, it, false)
}

// write puts it IfAbsent: up to writeAttempts tries, each bounded by
// usage.store_timeout, backing off 25 ms, then 50 ms, and giving up early
// when the next try could not end spillReserve before ctx's deadline.
// With spillFirst, it fails at once while the store failed in the last
// second.
func (r *Recorder) write(ctx context.Context, cfg *config.Config, it store.Item, spillFirst bool) error {
	if spillFirst && !r.call.Healthy() {
		return fmt.Errorf("usage: write %s: %w", it.Key, errStoreDown)
	}
	timeout := storeTimeoutOf(cfg)
	lastErr := errors.New("no time left before the request's deadline")
	for i := 0; i < writeAttempts; i++ {
		var wait time.Duration
		if i > 0 {
			wait = 25 * time.Millisecond << (i - 1)
		}
		budget := timeout
		if dl, ok := ctx.Deadline(); ok {
			budget = min(budget, time.Until(dl)-wait-spillReserve)
		}
		if budget <= 0 {
			break
		}
		if wait > 0 {
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return fmt.Errorf("usage: write %s: %w", it.Key, errors.Join(lastErr, ctx.Err()))
			}
		}
		actx, cancel := context.WithTimeout(ctx, budget)
		err := r.call.DoContext(actx, false, "usage record", func(cctx context.Context) error {
			_, err := r.store.Put(cctx, it, store.IfAbsent())
			return err
		})
		cancel()
		switch {
		case err == nil, errors.Is(err, store.ErrConflict):
			return nil // written now, or by an earlier (retried) write
		case errors.Is(err, store.ErrInvalid):
			return err
		}
		lastErr = err
	}
	return fmt.Errorf("usage: write %s: %w", it.Key, lastErr)
}

// recordItem builds the stored item of a record.
func recordItem(cfg *config.Config, rec *exchange.Record) (store.Item, error) {
	cp := *rec
	if cp.Team == "" {
		cp.Team = config.AnonymousTeam
	}
	if cp.RequestID == "" {
		return store.Item{}, fmt.Errorf("usage: %w: record without a request id", store.ErrInvalid)
	}
	if cp.Time.IsZero() {
		return store.Item{}, fmt.Errorf("usage: %w: record %s without a time", store.ErrInvalid, cp.RequestID)
	}
	cp.Time = cp.Time.UTC()
	cp.CacheHit = cp.CachedTokens > 0
	if cp.CostUSD == 0 && cfg != nil {
		cp.CostUSD = Cost(cfg, &cp)
	}
	data, err := json.Marshal(&cp)
	if err != nil {
		return store.Item{}, fmt.Errorf("usage: encode record: %w", err)
	}
	ttl := config.DefaultUsageTTL
	if cfg != nil && cfg.Usage.TTL > 0 {
		ttl = cfg.Usage.TTL.D()
	}
	return store.Item{
		Key:     store.UsageKey(cp.Team, cp.Time, cp.RequestID),
		Expires: cp.Time.Add(ttl),
		Data:    data,
	}, nil
}

// DecodeRecord reads a stored usage item back into rec (reusing its
// Attempts slice).
func DecodeRecord(it store.Item, rec *exchange.Record) error {
	*rec = exchange.Record{Attempts: rec.Attempts[:0]}
	if err := json.Unmarshal(it.Data, rec); err != nil {
		return fmt.Errorf("usage: decode %s: %w", it.Key, err)
	}
	return nil
}

// dayStart is the UTC midnight starting t's day.
func dayStart(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// BatchPutter is a store that writes many items in one transaction, each
// under its own condition, with one error per item (the embedded store:
// embedded.Store.PutBatch).
type BatchPutter interface {
	PutBatch(ctx context.Context, items []store.Item, c store.Cond) []error
}

// RecordBatch stores recs, logging (never returning) failures, like calling
// Record for each. When the store is a [BatchPutter] the records are
// written in one transaction; a record that batch did not store (other
// than one already stored) goes through Record, with its retries and
// failure handling. Otherwise it calls Record for each.
func (r *Recorder) RecordBatch(ctx context.Context, recs []*exchange.Record) {
	bp, ok := r.store.(BatchPutter)
	if !ok || len(recs) == 1 {
		for _, rec := range recs {
			r.Record(ctx, rec)
		}
		return
	}
	cfg := r.config()
	items := make([]store.Item, 0, len(recs))
	built := make([]*exchange.Record, 0, len(recs))
	for _, rec := range recs {
		it, err := recordItem(cfg, rec)
		if err != nil {
			r.Record(ctx, rec) // logs the same error
			continue
		}
		items = append(items, it)
		built = append(built, rec)
	}
	if len(items) == 0 {
		return
	}
	timeout := cfg.Usage.StoreTimeout.D()
	if timeout <= 0 {
		timeout = config.DefaultStoreTimeout
	}
	bctx, cancel := context.WithTimeout(ctx, timeout)
	errs := bp.PutBatch(bctx, items, store.IfAbsent())
	cancel()
	for i, err := range errs {
		if err != nil && !errors.Is(err, store.ErrConflict) {
			r.Record(ctx, built[i])
		}
	}
}
