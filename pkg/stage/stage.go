// Package stage holds the seams of the serving pipeline's optional stages:
// the response cache (pkg/cache), moderation (pkg/moderation) and pacing
// (pkg/pacing). The front (pkg/server) runs every client API through one
// pipeline and calls a stage only through these small interfaces; a nil
// stage in server.Options is off. Stages speak canonical exchange values
// only, so every ingress gets them.
package stage

import (
	"context"
	"net/http"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/provider"
)

// Source yields the events of one committed response: a failover session,
// a cache replay, or a stage wrapping one of them (a pacer, a hold).
//
// Next returns io.EOF after a clean end, gwerr.ErrClientGone when the
// client left, or a *gwerr.Error for the API's mid-stream error. Events may
// point into the source's buffers: they are valid until the next call to
// Next (exchange.Event.Clone keeps one). End must be called exactly once,
// with the error that ended the relay; Usage is valid after End.
type Source interface {
	Next() (exchange.Event, error)
	Usage() exchange.TokenUsage
	End(err error)
}

// Buffered is implemented by a Source that knows when its next event is
// already in memory: Buffered reports true only if Next will return at
// once, without waiting for the network (a false positive would hold back
// a frame the client could have had). The relay then writes the events at
// hand in one write instead of one each.
type Buffered interface {
	Buffered() bool
}

// Decoder reads an upstream's Raw events of one client API back into
// canonical events (an ingress implements it for its own API: see
// ingress.RawDecoder). ok is false when the frame carries something the
// canonical events cannot represent (several choices, log probabilities,
// a refusal, ...).
type Decoder func(dst []exchange.Event, ev *exchange.Event) (out []exchange.Event, ok bool)

// Pacing is the pacing stage (pkg/pacing implements it): it releases a
// stream's text at a chosen rate.
type Pacing interface {
	// Profile names the profile a request selected (header, query
	// parameter or body field), else routeDefault; "" means unpaced. An
	// unknown name is a *gwerr.Error (400).
	Profile(r *http.Request, req *exchange.Request, routeDefault string) (string, error)
	// Pace wraps src so that its text is released at the profile's rate
	// (src itself when the profile does not pace).
	Pace(src Source, profile string, o PaceOptions) Source
}

// PaceOptions are what a pacer needs from the front.
type PaceOptions struct {
	// Weigh returns the characters of text a Raw event carries; ok false
	// when it cannot tell (nil: it never can).
	Weigh func(ev *exchange.Event) (chars int, ok bool)
	// Cancel cancels the request's upstream work, so that End can stop a
	// read blocked on the upstream. Required.
	Cancel func()
}

// The response cache's verdicts (exchange.Record.ResponseCache and the
// x-gateway-cache response header).
const (
	CacheHit    = "hit"
	CacheMiss   = "miss"
	CacheBypass = "bypass"
	// CacheHeader is the request header that bypasses the cache
	// ("bypass") and the response header that reports its verdict.
	CacheHeader = "x-gateway-cache"
)

// Cache is the response-cache stage (pkg/cache implements it).
type Cache interface {
	// Lookup decides whether req is cacheable (its route and team opt in,
	// the client did not bypass) and looks its answer up. A store that
	// fails or is slow makes a miss, after a bounded wait.
	Lookup(ctx context.Context, cfg *config.Config, req *exchange.Request, h http.Header) CacheResult
}

// CacheResult is the cache's verdict on one request.
type CacheResult struct {
	// Status is CacheHit, CacheMiss, CacheBypass or "" (not cacheable).
	Status string
	// Hit is the stored answer, on a hit.
	Hit CachedAnswer
	// Tap records the answer of a miss (or of a bypass that may refresh
	// the entry); nil when nothing is to be stored.
	Tap CacheTap
}

// CachedAnswer is a stored answer.
type CachedAnswer interface {
	// Replay returns a source yielding the stored events with fresh ids
	// and timestamps; with gaps set, at the original relative timing.
	Replay(ctx context.Context, gaps bool, wantsUsage bool) Source
	// Served is the target that generated the answer and its usage then,
	// for the saved cost.
	Served() (target, provider string, u exchange.TokenUsage)
}

// CacheTap records one answer on its way to the client.
type CacheTap interface {
	// Wrap returns src recording every event it yields (Raw events are
	// read back through dec; an undecodable one makes the answer
	// uncacheable).
	Wrap(src Source, dec Decoder) Source
	// Commit stores the recorded answer when it is complete: a clean end
	// with a stop or tool_calls finish, within the size limit. The trace
	// names the target that served.
	Commit(ctx context.Context, tr *exchange.Trace) error
}

// Moderation is the moderation stage (pkg/moderation implements it).
type Moderation interface {
	// Input checks a request under its route's and team's policies before
	// anything is generated (or read from the cache). A non-nil error
	// refuses it: a *gwerr.Error with code
	// gwerr.CodeContentPolicyViolation or gwerr.CodeModerationUnavailable.
	Input(ctx context.Context, env ModerationEnv, req *exchange.Request) error
	// HoldsOutput reports whether req's answer is held for output
	// moderation (so that a cache replay need not wait its gaps).
	HoldsOutput(cfg *config.Config, req *exchange.Request) bool
	// Output returns src itself when no policy moderates answers;
	// otherwise it holds the whole answer, checks it, and returns a source
	// that yields it only once it passed - or, under policies with an
	// output window, a source that checks and yields it window by window
	// and whose Next returns the refusal (a *gwerr.Error) when a later
	// window fails. On an error of Output itself (a refusal, or the
	// answer's own failure) nothing was sent and src has been ended.
	Output(ctx context.Context, env ModerationEnv, req *exchange.Request, src Source, dec Decoder) (Source, error)
}

// ModerationEnv is what the moderation stage needs from the front.
type ModerationEnv struct {
	// Config is the config in force.
	Config *config.Config
	// Open runs a request through the failover engine (the chat-based
	// check asks its route).
	Open func(ctx context.Context, req *exchange.Request) (Source, error)
	// Call runs one of the stage's own upstream calls (the moderation
	// endpoint) through the failover engine (failover.Router.Call): req's
	// Steps under req.Policy, with the breaker, the key ledger, the retry
	// budget and the timeouts of every upstream call, into req.Trace. post
	// makes one attempt with the key the ledger chose (call.Key),
	// reports every response to call.OnResponse and returns the body of a
	// success or a *gwerr.Error.
	Call func(ctx context.Context, req *exchange.Request, post func(ctx context.Context, call *provider.Call) ([]byte, error)) ([]byte, error)
}
