// Package cache is the response cache: a pipeline stage (stage.Cache) that
// answers a repeated request from a stored answer instead of a provider.
//
// What is cached: the canonical events of a complete, successful answer
// (a clean end with finish reason stop or tool_calls; never an error, an
// interrupted stream, a paused turn to be continued, a route marked
// uncacheable, or an answer larger than cache.max_entry_bytes compressed),
// with their relative timing, in the gateway's table (item
// store.CacheKey/SharedCacheKey, DEFLATE-compressed, expiring after the
// route's TTL). Raw passthrough frames are read back into canonical events
// through the ingress's decoder (ingress.RawDecoder: the chat, Messages and
// Responses ingresses each read their API's frames with its wire package's
// one reader) when stored; a frame the canonical events cannot carry makes
// the answer uncacheable. Because
// entries are canonical, a hit is replayed through the ingress's encoder:
// a streaming hit chunk for chunk with new ids and timestamps, at the
// original relative timing (or a pacing profile's); a non-streaming hit as
// the body the encoder builds; and a streaming request can hit the entry a
// non-streaming one wrote, and the reverse. Fields only the raw frames
// carried (system_fingerprint, service_tier) are not replayed.
//
// What keys it: Fingerprint (the ingress API is part of it), scoped to the
// team unless the route's cache is shared. The prompt is never stored,
// only its hash; the completion is stored (content at rest): the cache is
// off unless a route or a team turns it on.
package cache

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/stage"
	"github.com/llmgw/llmgw/pkg/store"
)

// Store is what the cache needs of the table.
type Store interface {
	store.Getter
	store.Putter
}

// Options tune a Cache. Zero fields take defaults.
type Options struct {
	// Now is the clock of expiries (nil: time.Now); the timing recorded
	// between events is always wall-clock.
	Now func() time.Time
	// Logger receives store failures, at most one line per 10 s (nil:
	// discarded).
	Logger *slog.Logger
}

// Cache is the response cache over a store.
type Cache struct {
	store Store
	now   func() time.Time
	log   *slog.Logger

	mu      sync.Mutex
	lastLog time.Time
}

var _ stage.Cache = (*Cache)(nil)

// New returns a cache over st.
func New(st Store, o Options) *Cache {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Cache{store: st, now: o.Now, log: o.Logger}
}

// Header is the request header that bypasses the cache ("bypass") and the
// response header that reports its verdict (hit, miss or bypass).
const Header = stage.CacheHeader

// Lookup implements stage.Cache. A client bypasses the cache with
// Cache-Control: no-cache or x-gateway-cache: bypass (the fresh answer
// replaces the entry), or with Cache-Control: no-store (nothing is read or
// written).
func (c *Cache) Lookup(ctx context.Context, cfg *config.Config, req *exchange.Request, h http.Header) stage.CacheResult {
	team := config.AnonymousTeam
	if req.Caller != nil && req.Caller.Team != "" {
		team = req.Caller.Team
	}
	pol := cfg.CacheFor(req.Route, team)
	if !pol.On {
		return stage.CacheResult{}
	}
	noCache, noStore := directives(h)
	if noStore {
		return stage.CacheResult{Status: stage.CacheBypass}
	}
	hash, ok := Fingerprint(req)
	if !ok {
		return stage.CacheResult{}
	}
	key := store.CacheKey(team, hash)
	if pol.Shared {
		key = store.SharedCacheKey(hash)
	}
	t := &tap{c: c, key: key, ttl: pol.TTL, max: cfg.Cache.MaxEntryBytes, timeout: cfg.Cache.StoreTimeout.D(), api: req.API}
	if noCache {
		return stage.CacheResult{Status: stage.CacheBypass, Tap: t}
	}
	gctx, cancel := context.WithTimeout(ctx, cfg.Cache.StoreTimeout.D())
	defer cancel()
	it, found, err := c.store.Get(gctx, key)
	if err != nil {
		c.failed(ctx, "read", err) // a miss: the provider answers
		return stage.CacheResult{Status: stage.CacheMiss, Tap: t}
	}
	if found {
		e, err := decode(it.Data, int64(uncompressedLimit(cfg.Cache.MaxEntryBytes)))
		if err == nil && e.API == req.API {
			return stage.CacheResult{Status: stage.CacheHit, Hit: &answer{e: e, now: c.now}}
		}
		c.failed(ctx, "decode", err)
	}
	return stage.CacheResult{Status: stage.CacheMiss, Tap: t}
}

// directives reads the client's bypass headers.
func directives(h http.Header) (noCache, noStore bool) {
	for _, v := range h.Values("Cache-Control") {
		for _, d := range strings.Split(v, ",") {
			switch strings.ToLower(strings.TrimSpace(d)) {
			case "no-cache":
				noCache = true
			case "no-store":
				noStore = true
			}
		}
	}
	if strings.EqualFold(strings.TrimSpace(h.Get(Header)), "bypass") {
		noCache = true
	}
	return noCache, noStore
}

// uncompressedLimit bounds what an entry may hold before compression:
// text compresses well, but not without limit.
func uncompressedLimit(maxEntry int) int { return 8 * maxEntry }

// failed logs a store problem, at most once per 10 s.
func (c *Cache) failed(ctx context.Context, what string, err error) {
	if err == nil {
		return
	}
	c.mu.Lock()
	now := c.now()
	quiet := now.Sub(c.lastLog) < 10*time.Second
	if !quiet {
		c.lastLog = now
	}
	c.mu.Unlock()
	if !quiet {
		c.log.LogAttrs(ctx, slog.LevelWarn, "response cache: "+what+" failed; serving without it", slog.Any("error", err))
	}
}

// tap records a miss's answer as it is relayed (stage.CacheTap and the
// stage.Source it wraps).
type tap struct {
	c       *Cache
	key     store.Key
	ttl     time.Duration
	max     int
	timeout time.Duration
	api     exchange.API

	src     stage.Source
	dec     stage.Decoder
	last    time.Time
	evs     []Stored
	size    int
	bad     bool // undecodable, or too large: not cached
	end     error
	finish  string
	stop    string
	scratch []exchange.Event
	usage   bool
}

// Wrap implements stage.CacheTap.
func (t *tap) Wrap(src stage.Source, dec stage.Decoder) stage.Source {
	t.src, t.dec, t.last = src, dec, time.Now() // gaps are wall-clock, whatever the clock of expiries
	return t
}

// Next implements stage.Source, recording what it yields.
func (t *tap) Next() (exchange.Event, error) {
	ev, err := t.src.Next()
	if err != nil {
		t.end = err
		return ev, err
	}
	if t.bad {
		return ev, nil
	}
	now := time.Now()
	gap := now.Sub(t.last).Microseconds()
	t.last = now
	if ev.Kind != exchange.Raw {
		t.add(&ev, gap)
		return ev, nil
	}
	var ok bool
	if t.dec != nil {
		t.scratch, ok = t.dec(t.scratch[:0], &ev)
	}
	if !ok {
		t.drop()
		return ev, nil
	}
	for i := range t.scratch {
		t.add(&t.scratch[i], gap)
		gap = 0
	}
	return ev, nil
}

func (t *tap) add(ev *exchange.Event, gap int64) {
	switch ev.Kind {
	case exchange.Finish:
		t.finish, t.stop = strings.Clone(ev.Finish), strings.Clone(ev.Stop) // a decoded frame's point into the read buffer
	case exchange.Usage:
		t.usage = true
	case exchange.Raw:
		t.drop()
		return
	}
	s := toStored(ev, gap)
	if t.size += s.size(); t.size > uncompressedLimit(t.max) {
		t.drop()
		return
	}
	t.evs = append(t.evs, s)
}

// drop gives up on caching this answer and frees what was recorded.
func (t *tap) drop() { t.bad, t.evs = true, nil }

// Usage implements stage.Source.
func (t *tap) Usage() exchange.TokenUsage { return t.src.Usage() }

// End implements stage.Source.
func (t *tap) End(err error) { t.src.End(err) }

// Commit implements stage.CacheTap.
func (t *tap) Commit(ctx context.Context, tr *exchange.Trace) error {
	if t.bad || t.end != io.EOF || tr.Target == "" || t.stop == "pause_turn" ||
		(t.finish != exchange.FinishStop && t.finish != exchange.FinishToolCalls) {
		return nil // not a complete, successful answer
	}
	u := t.src.Usage()
	if !t.usage {
		ev := exchange.Event{Kind: exchange.Usage, Usage: u}
		t.evs = append(t.evs, toStored(&ev, 0))
	}
	data, err := encode(&Entry{API: t.api, Target: tr.Target, Provider: tr.Provider, Usage: u, Events: t.evs})
	if err != nil || len(data) > t.max {
		return err // too large: simply not cached
	}
	pctx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	_, err = t.c.store.Put(pctx, store.Item{Key: t.key, Expires: t.c.now().Add(t.ttl), Data: data}, store.Always())
	if err != nil {
		t.c.failed(ctx, "write", err)
	}
	return err
}
