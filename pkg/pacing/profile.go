// Package pacing releases a streamed answer's text at a steady, chosen rate
// instead of in the bursts the upstream produced. It is a pipeline stage
// (stage.Pacing): it wraps the response's event source, so it works on
// every client API and on cached replays alike, and it only ever delays
// canonical events - never drops, merges or reorders them; a Text or
// Reasoning event may be split into several.
//
// Profiles (rates in characters, i.e. Unicode code points, per second; one
// token is about four characters):
//
//	profile  rate        burst   smallest piece   about
//	instant  unpaced     -       -                as the upstream sends it
//	fast     400 char/s  200     16               100 tokens/s
//	steady   160 char/s  64      8                40 tokens/s
//	slow     60 char/s   24      4                15 tokens/s
//
// A request picks one with the x-gateway-pacing header, the pacing query
// parameter or a metadata.pacing body field (in that order), else its
// route's pacing default; without either it is not paced.
//
// The end bound: once the upstream has finished, whatever is still held is
// released fast enough to be out within EndBound (1 s), so pacing never
// delays the end of a stream by more than that. Between the upstream and
// the client at most MaxBuffer bytes are held; when the upstream is faster
// than the profile and the buffer is full, the pacer stops reading it (TCP
// back-pressure), exactly as a slow client would.
package pacing

import (
	"net/http"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/stage"
)

// Profile is one pacing profile.
type Profile struct {
	// Name is how requests and routes select it.
	Name string
	// CharsPerSecond is the steady release rate; 0 means unpaced.
	CharsPerSecond float64
	// Burst is how many characters may go out at once after a pause.
	Burst float64
	// Quantum is the smallest piece of text released while more is
	// waiting, so that pacing does not degrade into one-character frames.
	Quantum int
}

// The profiles.
var (
	Instant = Profile{Name: "instant"}
	Fast    = Profile{Name: "fast", CharsPerSecond: 400, Burst: 200, Quantum: 16}
	Steady  = Profile{Name: "steady", CharsPerSecond: 160, Burst: 64, Quantum: 8}
	Slow    = Profile{Name: "slow", CharsPerSecond: 60, Burst: 24, Quantum: 4}
)

// Profiles lists every profile, by name.
var Profiles = map[string]Profile{Instant.Name: Instant, Fast.Name: Fast, Steady.Name: Steady, Slow.Name: Slow}

// Names are the profile names, in order of speed.
var Names = []string{"instant", "fast", "steady", "slow"}

// Bounds of the stage.
const (
	// EndBound is the longest pacing may delay a stream's end after the
	// upstream finished.
	EndBound = time.Second
	// MaxBuffer bounds the bytes (of text and raw frames) held between the
	// upstream and the client.
	MaxBuffer = 256 << 10
	// rawFrameChars is the weight of a content-bearing raw frame whose
	// ingress cannot decode it: about one token.
	rawFrameChars = 4
)

// Header is the request header that selects a profile.
const Header = "x-gateway-pacing"

// Lookup returns the named profile.
func Lookup(name string) (Profile, bool) {
	p, ok := Profiles[strings.ToLower(strings.TrimSpace(name))]
	return p, ok
}

// Pacer is the pacing stage (stage.Pacing). The zero value is ready.
type Pacer struct {
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// After is the timer of that clock: a channel that delivers once d
	// has passed on it (nil: a real timer). A test gives a manual clock
	// both, and reads the released text against the clock.
	After func(d time.Duration) <-chan time.Time
}

var _ stage.Pacing = Pacer{}

// Profile implements stage.Pacing: the profile a request selected (header,
// then query parameter, then metadata.pacing in a JSON body), else the
// route's default; "" for none. An unknown name is a 400.
func (Pacer) Profile(r *http.Request, req *exchange.Request, routeDefault string) (string, error) {
	name, where := r.Header.Get(Header), Header
	if name == "" {
		name, where = r.URL.Query().Get("pacing"), "pacing"
	}
	if name == "" && len(req.Body) > 0 {
		if v := gjson.GetBytes(req.Body, "metadata.pacing"); v.Type == gjson.String {
			name, where = v.Str, "metadata.pacing"
		}
	}
	if name == "" {
		return routeDefault, nil
	}
	p, ok := Lookup(name)
	if !ok {
		return "", gwerr.New(gwerr.InvalidRequest, "unknown pacing profile %q; use one of %s", name, strings.Join(Names, ", ")).
			WithParam(where).WithCode("unknown_pacing_profile")
	}
	return p.Name, nil
}

// Pace implements stage.Pacing: src wrapped in a pacer for the named
// profile, or src itself for instant and unknown names.
func (p Pacer) Pace(src stage.Source, profile string, o stage.PaceOptions) stage.Source {
	prof, ok := Lookup(profile)
	if !ok || prof.CharsPerSecond <= 0 {
		return src
	}
	now := p.Now
	if now == nil {
		now = time.Now
	}
	st := newStream(src, prof, o, now)
	st.after = p.After
	return st
}
