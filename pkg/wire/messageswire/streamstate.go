package messageswire

import "errors"

// ErrStopWithoutReason is StreamState.Apply's error for a message_stop
// that came before any stop_reason: the stream is cut, not complete.
var ErrStopWithoutReason = errors.New("reached message_stop without a stop_reason")

// StreamState is the bookkeeping of one Messages event stream, the one
// copy every adapter that reads such a stream keeps (the Anthropic
// adapter's relay and translation, Bedrock's InvokeModel stream): whether
// message_start came, the usage it and message_delta gave, whether a
// stop_reason and message_stop came, and whether the answer ran in a
// code-execution container. The output characters (for an estimate when
// the usage is cut off) stay with each reader: a relay and a translator
// count them differently.
type StreamState struct {
	// Started: message_start (or, on Bedrock, its invocation metrics)
	// gave the prompt's figures; Usage holds them.
	Started bool
	// GotDelta: a message_delta (or the invocation metrics) gave the
	// final output_tokens.
	GotDelta bool
	// Finished: a stop_reason came; Stopped: message_stop came after it,
	// so the stream is complete.
	Finished, Stopped bool
	// Usage is the figures so far (message_start's, merged with each
	// message_delta's cumulative ones).
	Usage Usage
	// Container: an event showed the answer ran in a code-execution
	// container (EventInfo.Container).
	Container bool
}

// Apply records one event read by InspectEvent or ReadEvent:
// message_start's usage (the first one's), message_delta's usage merge and
// stop_reason, message_stop (ErrStopWithoutReason before a stop_reason),
// and any sign of a container. first reports that the event carried the
// stream's first stop_reason.
func (s *StreamState) Apply(ei *EventInfo) (first bool, err error) {
	s.Container = s.Container || ei.Container
	switch ei.Type {
	case EventMessageStart:
		if !s.Started {
			s.Started = true
			s.Usage = ei.Usage
		}
	case EventMessageDelta:
		if ei.MergeUsage(&s.Usage) {
			s.GotDelta = true
		}
		if ei.StopReason != "" {
			first = !s.Finished
			s.Finished = true
		}
	case EventMessageStop:
		if !s.Finished {
			return false, ErrStopWithoutReason
		}
		s.Stopped = true
	}
	return first, nil
}

// Figures is the stream's usage so far and whether part of it is an
// estimate: before message_start everything is (input from reqBytes, the
// upstream request's size, output from chars, the output characters the
// reader saw, through estimate, the gateway's token estimator); before
// the final output_tokens the output is at least chars' estimate.
func (s *StreamState) Figures(reqBytes, chars int, estimate func(chars int) int) (u Usage, estimated bool) {
	if !s.Started {
		return Usage{InputTokens: estimate(reqBytes), OutputTokens: estimate(chars)}, true
	}
	u = s.Usage
	if !s.GotDelta {
		u.OutputTokens = max(u.OutputTokens, estimate(chars))
		estimated = true
	}
	return u, estimated
}
