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

// Recorder persists usage records: exactly one item per request, written
// with Put IfAbsent on store.UsageKey(team, time, requestID), so a retried
// or repeated write never duplicates a record. Create it with NewRecorder.
type Recorder struct {
	store  store.Putter
	config func() *config.Config
	log    *slog.Logger
}

// NewRecorder returns a Recorder writing to p. cfg returns the config in
// force (for usage.ttl, usage.store_timeout and the price table); log
// receives write failures (nil: slog.Default()).
func NewRecorder(p store.Putter, cfg func() *config.Config, log *slog.Logger) *Recorder {
	if log == nil {
		log = slog.Default()
	}
	return &Recorder{store: p, config: cfg, log: log}
}

// Record stores rec, logging (never returning) a failure: its signature is
// server.Options.Record. The server calls it once per request with a
// context that survives the client's disconnect.
func (r *Recorder) Record(ctx context.Context, rec *exchange.Record) {
	if err := r.Write(ctx, rec); err != nil {
		r.log.LogAttrs(ctx, slog.LevelError, "usage record not stored",
			slog.String("request_id", rec.RequestID), slog.String("trace_id", rec.TraceID), slog.String("team", rec.Team), slog.Any("error", err))
	}
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
	timeout := cfg.Usage.StoreTimeout.D()
	if timeout <= 0 {
		timeout = config.DefaultStoreTimeout
	}
	var lastErr error
	for i := 0; i < writeAttempts; i++ {
		actx, cancel := context.WithTimeout(ctx, timeout)
		_, err := r.store.Put(actx, it, store.IfAbsent())
		cancel()
		switch {
		case err == nil, errors.Is(err, store.ErrConflict):
			return nil // written now, or by an earlier (retried) write
		case errors.Is(err, store.ErrInvalid):
			return err
		}
		lastErr = err
		if ctx.Err() != nil {
			break
		}
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
