package chat

import (
	"github.com/tidwall/gjson"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/ingress"
)

var _ ingress.RawDecoder = Ingress{}

// DecodeRaw implements ingress.RawDecoder: it reads a Chat Completions
// chunk (a stream's data frame) or a whole chat.completion body back into
// canonical events, in the order the encoder writes them: Start (the role
// chunk, or the body's id and model), reasoning, text, tool calls and their
// arguments, the finish reason, usage.
//
// Only what the canonical events carry is accepted: a frame with a second
// choice, log probabilities, a refusal, audio, annotations, a legacy
// function_call or any other non-empty field of the delta (or message) that
// is not listed above is refused (ok false). Top-level fields other than
// id, model, created, choices and usage (system_fingerprint, service_tier)
// are dropped: a response rebuilt from these events does not carry them.
func (Ingress) DecodeRaw(dst []exchange.Event, ev *exchange.Event) ([]exchange.Event, bool) {
	if ev.Kind != exchange.Raw || ev.RawAPI != exchange.Chat || !gjson.ValidBytes(ev.Raw) {
		return dst, false
	}
	root := gjson.ParseBytes(ev.Raw)
	if !root.IsObject() || root.Get("error").Exists() {
		return dst, false
	}
	whole := ev.Flags&exchange.Whole != 0
	part := "delta"
	if whole {
		part = "message"
	}
	choices := root.Get("choices")
	if choices.Exists() && !choices.IsArray() {
		return dst, false
	}
	list := choices.Array()
	if len(list) > 1 {
		return dst, false
	}
	start := exchange.Event{Kind: exchange.Start, ID: root.Get("id").String(), Name: root.Get("model").String(), Created: root.Get("created").Int()}
	if whole {
		dst = append(dst, start)
	}
	for _, c := range list {
		if c.Get("index").Int() != 0 || nonEmpty(c.Get("logprobs")) {
			return dst, false
		}
		d := c.Get(part)
		if !whole && d.Get("role").Exists() {
			dst = append(dst, start)
		}
		var ok bool
		if dst, ok = decodeDelta(dst, d); !ok {
			return dst, false
		}
		if f := c.Get("finish_reason"); f.Type == gjson.String {
			dst = append(dst, exchange.Event{Kind: exchange.Finish, Finish: f.String()})
		}
	}
	if u := root.Get("usage"); u.IsObject() {
		dst = append(dst, exchange.Event{Kind: exchange.Usage, Usage: exchange.TokenUsage{
			Input: int(u.Get("prompt_tokens").Int()), Output: int(u.Get("completion_tokens").Int()),
			CacheRead:  int(u.Get("prompt_tokens_details.cached_tokens").Int()),
			CacheWrite: int(u.Get("prompt_tokens_details.cache_creation_tokens").Int()),
			Reasoning:  int(u.Get("completion_tokens_details.reasoning_tokens").Int()),
		}})
	}
	return dst, true
}

// decodeDelta reads one choice's delta or message.
func decodeDelta(dst []exchange.Event, d gjson.Result) ([]exchange.Event, bool) {
	ok := true
	var reasoning, text string
	var calls []gjson.Result
	d.ForEach(func(k, v gjson.Result) bool {
		switch k.String() {
		case "role":
		case "content":
			text = v.String()
		case "reasoning_content", "reasoning":
			if v.Type == gjson.String {
				reasoning += v.String()
			}
		case "tool_calls":
			calls = v.Array()
		default:
			ok = !nonEmpty(v) // refusal, audio, annotations, function_call, ...
		}
		return ok
	})
	if !ok {
		return dst, false
	}
	if reasoning != "" {
		dst = append(dst, exchange.Event{Kind: exchange.Reasoning, Text: reasoning})
	}
	if text != "" {
		dst = append(dst, exchange.Event{Kind: exchange.Text, Text: text})
	}
	for i, tc := range calls {
		idx := i
		if n := tc.Get("index"); n.Exists() {
			idx = int(n.Int())
		}
		id, name := tc.Get("id").String(), tc.Get("function.name").String()
		if id != "" || name != "" {
			dst = append(dst, exchange.Event{Kind: exchange.ToolCall, Index: idx, ID: id, Name: name})
		}
		if args := tc.Get("function.arguments").String(); args != "" {
			dst = append(dst, exchange.Event{Kind: exchange.ToolArgs, Index: idx, Text: args})
		}
	}
	return dst, true
}

// nonEmpty reports whether a JSON value says something: not absent, null,
// false, "", [] or {}.
func nonEmpty(v gjson.Result) bool {
	switch {
	case !v.Exists(), v.Type == gjson.Null, v.Type == gjson.False:
		return false
	case v.Type == gjson.String:
		return v.Str != ""
	case v.IsArray():
		return len(v.Array()) > 0
	case v.IsObject():
		n := 0
		v.ForEach(func(_, _ gjson.Result) bool { n++; return false })
		return n > 0
	}
	return true
}
