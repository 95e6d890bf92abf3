package exchange

import "github.com/llmgw/llmgw/pkg/wire/delta"

// AppendParts appends the canonical events of parts a wire reader reported
// for one frame (see pkg/wire/delta), in order. ok is false when a part has
// no canonical form (a refusal, or output the canonical events cannot
// carry): the frame can be relayed, but not cached or rebuilt. The events'
// strings point where the parts' do.
func AppendParts(dst []Event, parts []delta.Part) (out []Event, ok bool) {
	for i := range parts {
		ev, ok := EventOf(&parts[i])
		if !ok {
			return dst, false
		}
		dst = append(dst, ev)
	}
	return dst, true
}

// EventOf is the canonical event of one part; ok is false for a Refusal
// or an Opaque part.
func EventOf(p *delta.Part) (Event, bool) {
	ev := Event{Index: p.Index, ID: p.ID, Name: p.Name, Text: p.Text}
	switch p.Kind {
	case delta.Start:
		ev = Event{Kind: Start, ID: p.ID, Name: p.Name, Created: p.Created}
	case delta.Text:
		ev.Kind = Text
	case delta.Reasoning:
		ev.Kind = Reasoning
	case delta.Signature:
		ev.Kind = Signature
	case delta.RedactedReasoning:
		ev.Kind = RedactedReasoning
	case delta.ToolCall:
		ev.Kind, ev.Text = ToolCall, ""
	case delta.ToolArgs:
		ev.Kind, ev.ID, ev.Name = ToolArgs, "", ""
	case delta.Finish:
		ev = Event{Kind: Finish, Finish: p.Finish, Stop: p.Stop, StopSequence: p.StopSequence}
	case delta.Usage:
		ev = Event{Kind: Usage, Usage: TokenUsage{Input: p.Usage.Input, Output: p.Usage.Output, CacheRead: p.Usage.CacheRead,
			CacheWrite: p.Usage.CacheWrite, CacheWrite1h: p.Usage.CacheWrite1h, Reasoning: p.Usage.Reasoning, Tier: p.Usage.Tier}}
	default:
		return Event{}, false
	}
	return ev, true
}
