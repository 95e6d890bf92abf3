// Package responsestate remembers which account created each Responses API
// response that passed through the gateway, so that everything that
// depends on the upstream's stored state - a follow-up naming it as
// previous_response_id, its retrieval, deletion, input items, its
// cancellation, a compaction - goes to that same account (target and
// provider key) on every instance.
//
// One store item per response id (store.ResponseOwnerKey), shared by all
// instances through the table, expiring with the upstream's retention
// (DefaultTTL). The item names the target, the key by fingerprint (never
// the key), the team and the route; never the prompt or the answer.
package responsestate

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/llmgw/llmgw/pkg/store"
)

// DefaultTTL is how long an owner item is kept: OpenAI keeps a stored
// response 30 days.
const DefaultTTL = 30 * 24 * time.Hour

// DefaultTimeout bounds one store call.
const DefaultTimeout = 2 * time.Second

// Owner is the account that created a response.
type Owner struct {
	// Target is the serving target's id ("provider/model"); Provider its
	// provider id; Route the route it was created through.
	Target, Provider, Route string
	// Key is the fingerprint of the provider key that created it ("" for
	// a provider without keys).
	Key string
	// Team is the caller's team: no other team may use the response.
	Team string
	// Background: the response was created with background: true; its
	// usage is settled when the gateway first sees it finished.
	Background bool
	// EstimatedInput is the input-token estimate recorded when a
	// background response was created (what settlement corrects).
	EstimatedInput int
	// Settled: a background response's true usage has been recorded.
	Settled bool
	// version is the stored item's version, for Settle.
	version int64
}

// Store is the table the owners live in.
type Store interface {
	store.Getter
	store.Putter
	store.Deleter
}

// Owners reads and writes owner items.
type Owners struct {
	st      Store
	ttl     time.Duration
	timeout time.Duration
	now     func() time.Time
}

// Options tune Owners; zero fields take defaults.
type Options struct {
	TTL     time.Duration    // item lifetime (DefaultTTL)
	Timeout time.Duration    // per store call (DefaultTimeout)
	Now     func() time.Time // clock (time.Now)
}

// New returns the owners kept in st.
func New(st Store, o Options) *Owners {
	if o.TTL <= 0 {
		o.TTL = DefaultTTL
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Owners{st: st, ttl: o.TTL, timeout: o.Timeout, now: o.Now}
}

// Attribute names of an owner item.
const (
	attrTarget   = "target"
	attrProvider = "provider"
	attrRoute    = "route"
	attrKey      = "key_fp"
	attrTeam     = "team"
	attrBg       = "background"
	attrEstIn    = "est_input"
	attrSettled  = "settled"
)

// Put records o as the owner of response id (replacing an earlier one: an
// id is the upstream's, unique to its account).
func (s *Owners) Put(ctx context.Context, id string, o Owner) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	_, err := s.st.Put(ctx, s.item(id, o), store.Always())
	return err
}

func (s *Owners) item(id string, o Owner) store.Item {
	strs := map[string]string{attrTarget: o.Target, attrProvider: o.Provider, attrRoute: o.Route, attrKey: o.Key, attrTeam: o.Team}
	nums := map[string]float64{attrEstIn: float64(o.EstimatedInput)}
	if o.Background {
		nums[attrBg] = 1
	}
	if o.Settled {
		nums[attrSettled] = 1
	}
	return store.Item{Key: store.ResponseOwnerKey(id), Expires: s.now().Add(s.ttl), Strs: strs, Nums: nums}
}

// Get returns the owner of response id; found is false when the gateway
// has no record of it (never created through it, or expired).
func (s *Owners) Get(ctx context.Context, id string) (o Owner, found bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	it, found, err := s.st.Get(ctx, store.ResponseOwnerKey(id))
	if err != nil || !found {
		return Owner{}, false, err
	}
	return Owner{Target: it.Strs[attrTarget], Provider: it.Strs[attrProvider], Route: it.Strs[attrRoute], Key: it.Strs[attrKey],
		Team: it.Strs[attrTeam], Background: it.Nums[attrBg] == 1, EstimatedInput: int(it.Nums[attrEstIn]),
		Settled: it.Nums[attrSettled] == 1, version: it.Version}, true, nil
}

// Delete forgets response id (after the upstream deleted it).
func (s *Owners) Delete(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	return s.st.Delete(ctx, store.ResponseOwnerKey(id), store.Always())
}

// Settle marks a background response's usage as recorded, once across all
// instances: first is true for the one caller that settled it (a
// conditional write on the version Get read); false when another did.
func (s *Owners) Settle(ctx context.Context, id string, o Owner) (first bool, err error) {
	if o.Settled {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	o.Settled = true
	_, err = s.st.Put(ctx, s.item(id, o), store.IfVersion(o.version))
	if errors.Is(err, store.ErrConflict) {
		return false, nil
	}
	return err == nil, err
}

// String names an owner in messages: its target only (never the key).
func (o Owner) String() string {
	if o.Target == "" {
		return "an unknown target"
	}
	return "target " + strconv.Quote(o.Target)
}
