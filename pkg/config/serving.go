package config

import "time"

// PacingProfiles are the pacing profiles a route may default to (the
// profiles of pkg/pacing, which tests that the lists agree).
var PacingProfiles = []string{"instant", "fast", "steady", "slow"}

// CacheSettings tune the response cache:
//
//	cache: {ttl: 1h, max_entry_bytes: 262144, store_timeout: 250ms}
type CacheSettings struct {
	// TTL is how long an entry is served (default 1h, at most 720h); a
	// route may set its own.
	TTL Duration `json:"ttl,omitempty"`
	// MaxEntryBytes caps one compressed entry (default 256 KiB, at most
	// MaxCacheEntryBytes); a larger answer is simply not cached.
	MaxEntryBytes int `json:"max_entry_bytes,omitempty"`
	// StoreTimeout bounds each cache read and write (default:
	// usage.store_timeout). A read that fails or times out is a miss.
	StoreTimeout Duration `json:"store_timeout,omitempty"`
}

// RouteCache opts a route in to the response cache:
//
//	routes: {faq: {cache: {enabled: true, shared: true, ttl: 10m}, targets: [...]}}
type RouteCache struct {
	// Enabled caches the route's answers (per team, see Shared).
	Enabled bool `json:"enabled,omitempty"`
	// Uncacheable never caches the route, even for a team that turns the
	// cache on for all its routes.
	Uncacheable bool `json:"uncacheable,omitempty"`
	// Shared lets every team read the entries any team wrote (the answer
	// depends on the request only); default: entries are per team.
	Shared bool `json:"shared,omitempty"`
	// TTL overrides cache.ttl for the route.
	TTL Duration `json:"ttl,omitempty"`
}

// Defaults and bounds of the response cache.
const (
	DefaultCacheTTL    = time.Hour
	maxCacheTTL        = 720 * time.Hour
	DefaultCacheEntry  = 256 << 10
	MaxCacheEntryBytes = 380 << 10 // a DynamoDB item is at most 400 KB, key and attributes included
	minCacheEntryBytes = 1 << 10
)

// CachePolicy is the response cache's decision for one route and team.
type CachePolicy struct {
	On     bool
	Shared bool
	TTL    time.Duration
}

// CacheFor decides whether the answers of route are cached for team: never
// when the route is uncacheable; else as the team says when it says; else
// as the route says. Off for unknown routes and teams without keys.
func (c *Config) CacheFor(route, team string) CachePolicy {
	r := c.Routes[route]
	if r == nil {
		return CachePolicy{}
	}
	rc := r.Cache
	if rc == nil {
		rc = &RouteCache{}
	}
	on := rc.Enabled
	if t := c.Teams[team]; t != nil && t.Cache != nil {
		on = *t.Cache
	}
	if !on || rc.Uncacheable {
		return CachePolicy{}
	}
	ttl := rc.TTL.D()
	if ttl == 0 {
		ttl = c.Cache.TTL.D()
	}
	return CachePolicy{On: true, Shared: rc.Shared, TTL: ttl}
}

// prepareServing defaults and validates the serving stages' settings:
// pacing defaults, the response cache and moderation policies. It runs
// last (it names routes, providers and teams).
func (c *Config) prepareServing() error {
	cs := &c.Cache
	if cs.TTL == 0 {
		cs.TTL = Duration(DefaultCacheTTL)
	}
	if cs.MaxEntryBytes == 0 {
		cs.MaxEntryBytes = DefaultCacheEntry
	}
	if cs.StoreTimeout == 0 {
		cs.StoreTimeout = c.Usage.StoreTimeout
	}
	if err := checkTTL(pathOf("cache", "ttl"), cs.TTL); err != nil {
		return err
	}
	if cs.MaxEntryBytes < minCacheEntryBytes || cs.MaxEntryBytes > MaxCacheEntryBytes {
		return errAt(pathOf("cache", "max_entry_bytes"), "%d is not between %d and %d", cs.MaxEntryBytes, minCacheEntryBytes, MaxCacheEntryBytes)
	}
	if cs.StoreTimeout.D() > 10*time.Second {
		return errAt(pathOf("cache", "store_timeout"), "%s is longer than 10s", cs.StoreTimeout.D())
	}
	for _, name := range sortedKeys(c.Routes) {
		r := c.Routes[name]
		if r.Pacing != "" {
			if err := oneOf(pathOf("routes", name, "pacing"), "pacing profile", r.Pacing, PacingProfiles...); err != nil {
				return err
			}
		}
		if rc := r.Cache; rc != nil && rc.TTL != 0 {
			if err := checkTTL(pathOf("routes", name, "cache", "ttl"), rc.TTL); err != nil {
				return err
			}
		}
		if l := r.CacheLocality; l != nil && (l.TTL < 0 || l.TTL.D() > 24*time.Hour) {
			return errAt(pathOf("routes", name, "cache_locality", "ttl"), "%s is not between 0 (the default, 1h) and 24h", l.TTL.D())
		}
	}
	return c.prepareModeration()
}

func checkTTL(at Path, d Duration) error {
	if d.D() < time.Second || d.D() > maxCacheTTL {
		return errAt(at, "%s is not between 1s and %s", d.D(), maxCacheTTL)
	}
	return nil
}
