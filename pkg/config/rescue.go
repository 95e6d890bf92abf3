package config

import (
	"time"
)

// HeadBuffer is a route's head buffer (opt-in; docs/failover.md): a
// stream is held back until it has produced Tokens output tokens (the
// gateway's estimate, one per four characters) or until Duration has
// passed since its first content, whichever comes first (an upstream that
// ends sooner is committed whole). Until then nothing is sent to the
// client, so a cut, an in-band error or a gap longer than the route's
// idle_timeout inside the window fails over like a failure before the
// first token: invisibly. Zero fields are not limits; at least one must be
// set.
type HeadBuffer struct {
	// Tokens is how many output tokens are held before committing.
	Tokens int `json:"tokens,omitempty"`
	// Duration is how long after the first content the stream is held.
	Duration Duration `json:"duration,omitempty"`
}

// maxHeadBuffer bounds the head window: the client waits that long.
const maxHeadBuffer = time.Minute

func (h *HeadBuffer) validate(at Path) error {
	if h == nil {
		return nil
	}
	at = at.Key("head_buffer")
	switch {
	case h.Tokens < 0 || h.Tokens > 100_000:
		return errAt(at.Key("tokens"), "%d is not between 0 and 100000", h.Tokens)
	case h.Duration.D() > maxHeadBuffer:
		return errAt(at.Key("duration"), "%s exceeds %s", h.Duration.D(), maxHeadBuffer)
	case h.Tokens == 0 && h.Duration == 0:
		return errAt(at, "set tokens, duration or both")
	}
	return nil
}

// ContinuesMidStream reports whether the route asks for mid-stream
// continuation (opt-in; docs/failover.md): a stream that dies after its
// first token is continued from the text already sent by the next target
// that declares prefill support.
func (p Policy) ContinuesMidStream() bool { return p.Continuation != nil && *p.Continuation }
