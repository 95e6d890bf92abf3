package messageswire

import (
	"strings"

	"github.com/tidwall/gjson"

	"github.com/llmgw/llmgw/pkg/wire/delta"
	"github.com/llmgw/llmgw/pkg/wire/jsonb"
)

// The one reader of Messages API answers: a stream's events (InspectEvent,
// ReadEvent) and a whole response (ReadMessage). The Anthropic adapter
// relays and translates with it, and the Messages ingress reads its
// passthrough frames back with it (for the response cache and pacing).
//
// What each event carries, as parts (pkg/wire/delta):
//
//	message_start                        -> Start{ID: message id, Name: model}
//	content_block_start text             -> Text when its text is not empty (citations: Opaque)
//	content_block_start thinking         -> Reasoning, Signature (those not empty)
//	content_block_start redacted_thinking -> RedactedReasoning{Text: data}
//	content_block_start tool_use         -> ToolCall{Index: the block index, ID, Name}
//	content_block_start of another type  -> Opaque (server tools and their results)
//	content_block_delta text_delta       -> Text
//	content_block_delta thinking_delta   -> Reasoning
//	content_block_delta signature_delta  -> Signature
//	content_block_delta input_json_delta -> ToolArgs{Index: the block index}
//	content_block_delta of another type  -> Opaque (citations_delta, ...)
//	message_delta with a stop_reason     -> Finish{FinishReason(stop), Stop, StopSequence}
//	content_block_stop, ping, message_stop, unknown events -> nothing
//
// Usage is reported in EventInfo (message_start's figures, message_delta's
// cumulative ones), not as parts: a stream's usage is only whole at its end
// (EventInfo.MergeUsage).

// Which figures a message_delta's usage carries (EventInfo.UsageHas).
const (
	HasInput uint8 = 1 << iota
	HasOutput
	HasCacheRead
	HasCacheWrite
	HasServerTools
	HasCacheCreation
)

// EventInfo is what one stream event (or a whole response) says, for a
// relaying adapter. Its strings point into the frame, except ErrorType.
type EventInfo struct {
	// Type is the event's type: its event line, else its data's "type"
	// (one of the Event constants when it is a known one).
	Type string
	// Content: the event carries generated output. Chars counts its
	// characters (code points) of text, reasoning, tool names and input.
	Content bool
	Chars   int
	// Index is a content block event's block index; Block a
	// content_block_start's block type ("" when it has no content_block).
	Index int
	Block string
	// Usage holds message_start's (or a whole response's) usage, or the
	// figures of a message_delta's usage that UsageHas names.
	Usage    Usage
	UsageHas uint8
	// StopReason and StopSequence are a message_delta's (or a whole
	// response's) stop_reason and stop_sequence.
	StopReason, StopSequence string
	// Error: an error event (or an error body); ErrorType its type, copied.
	Error     bool
	ErrorType string
	// Container: the event (or whole response) shows the answer ran in a
	// code-execution container, which Anthropic bills by time: it names
	// one (message.container, a message_delta's delta.container) or holds
	// a code-execution block (a server_tool_use of a *code_execution tool,
	// a *code_execution_tool_result).
	Container bool
}

// isContainer reports whether a container member names a container.
func isContainer(c gjson.Result) bool { return c.IsObject() && c.Get("id").Str != "" }

// codeExecutionBlock reports whether a content block of type typ (a
// server_tool_use calling name) ran code in a container.
func codeExecutionBlock(typ string, cb gjson.Result) bool {
	if typ == BlockServerToolUse {
		return strings.HasSuffix(cb.Get("name").Str, "code_execution")
	}
	return strings.HasSuffix(typ, "code_execution_tool_result")
}

// FinishReason maps a stop_reason to the canonical finish reason (OpenAI's
// vocabulary: stop, length, tool_calls, content_filter).
func FinishReason(stop string) string {
	switch stop {
	case StopMaxTokens, StopModelContextWindowExceeded:
		return "length"
	case StopToolUse:
		return "tool_calls"
	case StopRefusal:
		return "content_filter"
	}
	return "stop" // end_turn, stop_sequence, pause_turn
}

// MergeUsage applies a message_delta's cumulative figures to u and reports
// whether they included the final output_tokens.
func (i *EventInfo) MergeUsage(u *Usage) bool {
	if i.UsageHas&HasInput != 0 {
		u.InputTokens = i.Usage.InputTokens
	}
	if i.UsageHas&HasCacheRead != 0 {
		u.CacheReadInputTokens = i.Usage.CacheReadInputTokens
	}
	if i.UsageHas&HasCacheWrite != 0 {
		u.CacheCreationInputTokens = i.Usage.CacheCreationInputTokens
	}
	if i.UsageHas&HasServerTools != 0 {
		u.ServerToolUse = i.Usage.ServerToolUse
	}
	if i.UsageHas&HasCacheCreation != 0 {
		u.CacheCreation = i.Usage.CacheCreation
	}
	if i.Usage.ServiceTier != "" {
		u.ServiceTier = i.Usage.ServiceTier
	}
	if i.UsageHas&HasOutput != 0 {
		u.OutputTokens = i.Usage.OutputTokens
		return true
	}
	return false
}

// InspectEvent reads one stream event without allocating (but for an
// error's type): what a relaying adapter needs. event is the frame's event
// line (may be empty), data its JSON.
func InspectEvent(event, data []byte) EventInfo {
	ei, _ := readEvent(nil, event, data, false)
	return ei
}

// ReadEvent is InspectEvent with the event's parts appended to dst.
func ReadEvent(dst []delta.Part, event, data []byte) (EventInfo, []delta.Part) {
	return readEvent(dst, event, data, true)
}

// knownEvents are the event types, as constants (EventInfo.Type never
// points into a frame for them).
var knownEvents = [...]string{EventMessageStart, EventContentBlockStart, EventContentBlockDelta, EventContentBlockStop,
	EventMessageDelta, EventMessageStop, EventPing, EventError}

func readEvent(dst []delta.Part, event, data []byte, collect bool) (EventInfo, []delta.Part) {
	var ei EventInfo
	s := jsonb.String(data)
	ei.Type = jsonb.String(event)
	if ei.Type == "" {
		ei.Type = gjson.Get(s, "type").Str
	}
	for _, k := range knownEvents {
		if ei.Type == k {
			ei.Type = k
		}
	}
	switch ei.Type {
	case EventError:
		ei.Error = true
		ei.ErrorType = strings.Clone(gjson.Get(s, "error.type").Str)
	case EventMessageStart:
		m := gjson.Get(s, "message")
		ei.Usage = usageOf(m.Get("usage"))
		ei.Container = isContainer(m.Get("container"))
		if collect && m.IsObject() {
			dst = append(dst, delta.Part{Kind: delta.Start, ID: m.Get("id").Str, Name: m.Get("model").Str})
		}
	case EventContentBlockStart:
		ei.Index = int(gjson.Get(s, "index").Int())
		dst = readBlock(dst, &ei, gjson.Get(s, "content_block"), collect)
	case EventContentBlockDelta:
		ei.Index = int(gjson.Get(s, "index").Int())
		d := gjson.Get(s, "delta")
		ei.Content, ei.Chars = deltaContent(d)
		if collect && ei.Content {
			dst = appendDelta(dst, ei.Index, d)
		}
	case EventMessageDelta:
		u := gjson.Get(s, "usage")
		field := func(key string, bit uint8) int {
			if v := u.Get(key); v.Type == gjson.Number {
				ei.UsageHas |= bit
				return int(v.Int())
			}
			return 0
		}
		ei.Usage = Usage{InputTokens: field("input_tokens", HasInput), OutputTokens: field("output_tokens", HasOutput),
			CacheReadInputTokens:     field("cache_read_input_tokens", HasCacheRead),
			CacheCreationInputTokens: field("cache_creation_input_tokens", HasCacheWrite)}
		if st := u.Get("server_tool_use"); st.IsObject() {
			ei.UsageHas |= HasServerTools
			ei.Usage.ServerToolUse = serverToolUseOf(st)
		}
		if cc := u.Get("cache_creation"); cc.IsObject() {
			ei.UsageHas |= HasCacheCreation
			ei.Usage.CacheCreation = cacheCreationOf(cc)
		}
		ei.Usage.ServiceTier = u.Get("service_tier").Str
		ei.StopReason = gjson.Get(s, "delta.stop_reason").Str
		ei.StopSequence = gjson.Get(s, "delta.stop_sequence").Str
		ei.Container = isContainer(gjson.Get(s, "delta.container"))
		if collect && ei.StopReason != "" {
			dst = append(dst, delta.Part{Kind: delta.Finish, Finish: FinishReason(ei.StopReason), Stop: ei.StopReason, StopSequence: ei.StopSequence})
		}
	}
	return ei, dst
}

// deltaContent reports whether a content_block_delta's delta carries
// output (a member besides type that is not empty) and its characters (a
// non-string member counts one), without decoding its strings.
func deltaContent(d gjson.Result) (content bool, chars int) {
	jsonb.Members(d.Raw, func(k, v string) bool {
		switch {
		case k == "type" || v == `""` || v == "null":
		case v[0] == '"':
			content, chars = true, chars+jsonb.Chars(v)
		default:
			content, chars = true, chars+1
		}
		return true
	})
	return content, chars
}

// appendDelta appends the part of a content_block_delta's delta.
func appendDelta(dst []delta.Part, index int, d gjson.Result) []delta.Part {
	typ := d.Get("type").Str
	p := delta.Part{Index: index}
	switch typ {
	case DeltaText:
		p.Kind, p.Text = delta.Text, d.Get("text").Str
	case DeltaThinking:
		p.Kind, p.Text = delta.Reasoning, d.Get("thinking").Str
	case DeltaSignature:
		p.Kind, p.Text = delta.Signature, d.Get("signature").Str
	case DeltaInputJSON:
		p.Kind, p.Text = delta.ToolArgs, d.Get("partial_json").Str
	default: // citations_delta, ...
		p.Kind, p.Name = delta.Opaque, typ
	}
	if p.Kind != delta.Opaque && p.Text == "" {
		return dst
	}
	return append(dst, p)
}

// readBlock reads a content block (of a content_block_start, or of a whole
// response) into ei and, with collect, its parts.
func readBlock(dst []delta.Part, ei *EventInfo, cb gjson.Result, collect bool) []delta.Part {
	if !cb.IsObject() {
		return dst
	}
	typ := cb.Get("type").Str
	ei.Block = typ
	ei.Container = ei.Container || codeExecutionBlock(typ, cb)
	switch typ {
	case BlockText:
		text := cb.Get("text")
		if ei.Chars += jsonb.Chars(text.Raw); text.Str != "" {
			ei.Content = true
		}
		if collect && text.Str != "" {
			dst = append(dst, delta.Part{Kind: delta.Text, Text: text.Str})
		}
		if c := cb.Get("citations"); collect && c.IsArray() && len(c.Raw) > 2 {
			ei.Content = true
			dst = append(dst, delta.Part{Kind: delta.Opaque, Name: "citations"})
		}
		return dst
	case BlockThinking:
		th, sig := cb.Get("thinking"), cb.Get("signature")
		ei.Chars += jsonb.Chars(th.Raw)
		ei.Content = ei.Content || th.Str != "" || sig.Str != ""
		if collect && th.Str != "" {
			dst = append(dst, delta.Part{Kind: delta.Reasoning, Text: th.Str})
		}
		if collect && sig.Str != "" {
			dst = append(dst, delta.Part{Kind: delta.Signature, Text: sig.Str})
		}
		return dst
	}
	ei.Content = true
	switch typ {
	case BlockRedactedThinking:
		if collect {
			dst = append(dst, delta.Part{Kind: delta.RedactedReasoning, Text: cb.Get("data").Str})
		}
	case BlockToolUse:
		name, input := cb.Get("name"), cb.Get("input")
		ei.Chars += jsonb.Chars(name.Raw)
		if collect {
			dst = append(dst, delta.Part{Kind: delta.ToolCall, Index: ei.Index, ID: cb.Get("id").Str, Name: name.Str})
			if input.IsObject() && input.Raw != "{}" && strings.TrimSpace(input.Raw[1:len(input.Raw)-1]) != "" {
				dst = append(dst, delta.Part{Kind: delta.ToolArgs, Index: ei.Index, Text: input.Raw})
			}
		}
	default: // server_tool_use, web_search_tool_result, ...
		if collect {
			dst = append(dst, delta.Part{Kind: delta.Opaque, Name: typ})
		}
	}
	return dst
}

// ReadMessage reads a whole (non-streaming) response: Type is "message"
// (or "error"), Content whether a block carries output, Usage and
// StopReason its own; with its parts appended to dst (Start, each block's
// as a content_block_start would give them, with tool calls numbered by
// their position in content, then Finish and Usage).
func ReadMessage(dst []delta.Part, body []byte) (EventInfo, []delta.Part) {
	var ei EventInfo
	doc := gjson.Parse(jsonb.String(body))
	ei.Type = doc.Get("type").Str
	if ei.Type == EventError {
		ei.Error, ei.ErrorType = true, strings.Clone(doc.Get("error.type").Str)
		return ei, dst
	}
	dst = append(dst, delta.Part{Kind: delta.Start, ID: doc.Get("id").Str, Name: doc.Get("model").Str})
	doc.Get("content").ForEach(func(k, b gjson.Result) bool {
		ei.Index = int(k.Int())
		dst = readBlock(dst, &ei, b, true)
		return true
	})
	ei.Index = 0
	ei.Container = ei.Container || isContainer(doc.Get("container"))
	ei.Usage = usageOf(doc.Get("usage"))
	ei.StopReason, ei.StopSequence = doc.Get("stop_reason").Str, doc.Get("stop_sequence").Str
	if ei.StopReason != "" {
		dst = append(dst, delta.Part{Kind: delta.Finish, Finish: FinishReason(ei.StopReason), Stop: ei.StopReason, StopSequence: ei.StopSequence})
	}
	return ei, append(dst, delta.Part{Kind: delta.Usage, Usage: Tokens(ei.Usage)})
}

// RanInContainer reports whether a whole response ran in a code-execution
// container (as EventInfo.Container): it names one, or holds a
// code-execution block.
func RanInContainer(body []byte) bool {
	doc := gjson.Parse(jsonb.String(body))
	if isContainer(doc.Get("container")) {
		return true
	}
	ran := false
	doc.Get("content").ForEach(func(_, b gjson.Result) bool {
		ran = codeExecutionBlock(b.Get("type").Str, b)
		return !ran
	})
	return ran
}

// Tokens is u in the API-neutral form: Input counts every prompt token,
// cached or not (Anthropic's input_tokens excludes them).
func Tokens(u Usage) delta.Tokens {
	return delta.Tokens{Input: u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens, Output: u.OutputTokens,
		CacheRead: u.CacheReadInputTokens, CacheWrite: u.CacheCreationInputTokens, CacheWrite1h: u.CacheCreation.Ephemeral1hInputTokens,
		Tier: u.ServiceTier}
}

// usageOf reads a usage object.
func usageOf(u gjson.Result) Usage {
	return Usage{InputTokens: int(u.Get("input_tokens").Int()), OutputTokens: int(u.Get("output_tokens").Int()),
		CacheCreationInputTokens: int(u.Get("cache_creation_input_tokens").Int()), CacheReadInputTokens: int(u.Get("cache_read_input_tokens").Int()),
		ServerToolUse: serverToolUseOf(u.Get("server_tool_use")), CacheCreation: cacheCreationOf(u.Get("cache_creation")),
		ServiceTier: u.Get("service_tier").Str}
}

// cacheCreationOf reads a usage's cache_creation object.
func cacheCreationOf(cc gjson.Result) CacheCreation {
	return CacheCreation{Ephemeral5mInputTokens: int(cc.Get("ephemeral_5m_input_tokens").Int()),
		Ephemeral1hInputTokens: int(cc.Get("ephemeral_1h_input_tokens").Int())}
}

// serverToolUseOf reads a usage's server_tool_use object.
func serverToolUseOf(st gjson.Result) ServerToolUse {
	return ServerToolUse{WebSearchRequests: int(st.Get("web_search_requests").Int()), WebFetchRequests: int(st.Get("web_fetch_requests").Int())}
}
