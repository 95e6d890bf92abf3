// Package locality keeps one conversation on the target and provider key
// that last served it, for routes with cache_locality: a provider's prompt
// cache lives in one account (one key's organisation) and one deployment,
// so a conversation that hops between the targets or keys of its route
// pays cache writes again where it could have paid cache reads.
//
// A conversation is named by its affinity hash (Affinity): the client's
// prompt_cache_key when it sends one, else its stable prefix. Its place
// (the serving target's id and the key's fingerprint, never the key, never
// text) is one store item (store.LocalityKey) shared by every instance,
// expiring after the route's TTL. Reading it costs one Get per request of
// such a route; it is written only when the served place changes, or when
// the item has lived more than half its TTL (so an active conversation
// keeps its place), never on every request.
package locality

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"hash"
	"time"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/store"
)

// DefaultTimeout bounds one store call: locality is an optimisation, so a
// slow store costs a request at most this much, never an error.
const DefaultTimeout = 250 * time.Millisecond

// Place is where a conversation was last served.
type Place struct {
	// Target is the serving target's id (config.Step.ID).
	Target string
	// Key is the fingerprint of the provider key that served it ("" for a
	// provider without keys).
	Key string
	// expires is when the stored item expires (zero when not stored).
	expires time.Time
}

// Store is the table places live in.
type Store interface {
	store.Getter
	store.Putter
}

// Places reads and writes conversation places. Create it with New.
type Places struct {
	st      Store
	timeout time.Duration
	now     func() time.Time
}

// Options tune Places; zero fields take defaults.
type Options struct {
	Timeout time.Duration    // per store call (DefaultTimeout)
	Now     func() time.Time // clock (time.Now)
}

// New returns the places kept in st.
func New(st Store, o Options) *Places {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Places{st: st, timeout: o.Timeout, now: o.Now}
}

// Attribute names of a place item.
const (
	attrTarget = "target"
	attrKey    = "key_fp"
)

// Get returns the place of conversation hash; found is false when none is
// stored (a new conversation, or one idle past its TTL).
func (p *Places) Get(ctx context.Context, hash string) (pl Place, found bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	it, found, err := p.st.Get(ctx, store.LocalityKey(hash))
	if err != nil || !found {
		return Place{}, false, err
	}
	return Place{Target: it.Strs[attrTarget], Key: it.Strs[attrKey], expires: it.Expires}, true, nil
}

// Note records that conversation hash was served at place to, having been
// found at from (found: whether Get found one), for ttl. It writes only
// when the place changed or the stored item is past half its lifetime;
// wrote reports whether it did.
func (p *Places) Note(ctx context.Context, hash string, from Place, found bool, to Place, ttl time.Duration) (wrote bool, err error) {
	now := p.now()
	if found && from.Target == to.Target && from.Key == to.Key && from.expires.Sub(now) > ttl/2 {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	it := store.Item{Key: store.LocalityKey(hash), Expires: now.Add(ttl), Strs: map[string]string{attrTarget: to.Target, attrKey: to.Key}}
	if _, err := p.st.Put(ctx, it, store.Always()); err != nil {
		return false, err
	}
	return true, nil
}

// Affinity is the hash naming the conversation of request rq: of the
// team, the route and the client's prompt_cache_key when it sent one (Chat
// Completions and Responses take it), else of the team, the route and the
// request's stable prefix - its system prompt, its tools and its first
// message, in canonical form (exchange.Prompt; a tool's name, description,
// schema and raw definition as they came), which every later request
// of the conversation repeats unchanged. "" when the request has neither
// (no canonical prompt, no key).
func Affinity(rq *exchange.Request, team, cacheKey string) string {
	h := sha256.New()
	enc := json.NewEncoder(h)
	if err := enc.Encode([]string{team, rq.Route}); err != nil {
		return ""
	}
	switch {
	case cacheKey != "":
		if enc.Encode([]string{"prompt_cache_key", cacheKey}) != nil {
			return ""
		}
	case rq.Prompt != nil:
		p := rq.Prompt
		first := []exchange.Message{}
		if len(p.Messages) > 0 {
			first = p.Messages[:1]
		}
		if enc.Encode("prefix") != nil || enc.Encode(p.System) != nil || enc.Encode(first) != nil {
			return ""
		}
		// Tools are the bulk of an agent's prefix: their bytes are hashed
		// as they are, each field length-prefixed, not re-encoded.
		for i := range p.Tools {
			tl := &p.Tools[i]
			for _, f := range [][]byte{{byte(tl.Kind)}, []byte(tl.Name), []byte(tl.Description), tl.Schema, []byte(tl.Type), tl.Raw} {
				writeField(h, f)
			}
		}
	default:
		return ""
	}
	return hex.EncodeToString(h.Sum(nil))
}

// writeField writes f to h after its length, so that no two field lists
// hash alike.
func writeField(h hash.Hash, f []byte) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(f)))
	h.Write(n[:])
	h.Write(f)
}
