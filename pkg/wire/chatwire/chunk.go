package chatwire

import (
	"strings"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/llmgw/llmgw/pkg/wire/delta"
	"github.com/llmgw/llmgw/pkg/wire/jsonb"
)

// Usage is the OpenAI usage object.
type Usage struct {
	PromptTokens        int                  `json:"prompt_tokens"`
	CompletionTokens    int                  `json:"completion_tokens"`
	TotalTokens         int                  `json:"total_tokens"`
	PromptTokensDetails *PromptTokensDetails `json:"prompt_tokens_details,omitempty"`
}

// PromptTokensDetails carries cached prompt tokens.
type PromptTokensDetails struct {
	CachedTokens int `json:"cached_tokens"`
	// CacheCreationTokens is a gateway extension: prompt tokens written to a
	// provider's prompt cache (Anthropic, Bedrock), billed differently.
	CacheCreationTokens int `json:"cache_creation_tokens,omitempty"`
}

// ChunkInfo is what the gateway needs to know about one chunk or response:
// whether it carries content, whether it finishes a choice, its usage and
// whether it is an error. It holds no references into the inspected bytes.
type ChunkInfo struct {
	Content bool // text, refusal, reasoning, a tool call or a function call
	Chars   int  // characters (code points) of generated text, tool names and arguments
	Finish  bool // a choice carries a finish_reason
	// FinishReason is the finish_reason when it is one of OpenAI's
	// (stop, length, tool_calls, content_filter, function_call); "" otherwise.
	FinishReason string
	ToolCalls    bool // a tool call is present
	HasUsage     bool // a usage object is present
	UsageOnly    bool // the include_usage chunk: choices is empty and usage is set
	Usage        Usage
	Error        bool // a top-level error object: the upstream reports a failure in-band
	ErrorType    string
	// ServiceTier is the top-level service_tier of a chunk or body that
	// carries usage (copied): the tier that served the request.
	ServiceTier string
}

// bytesString views b as a string without copying. The string must not
// outlive b's contents.
func bytesString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// InspectChunk reads a chat.completion.chunk (the JSON of one SSE data
// frame) without allocating: what a relaying adapter needs.
func InspectChunk(data []byte) ChunkInfo {
	ci, _ := read(nil, bytesString(data), "delta", false, false)
	return ci
}

// InspectResponse reads a non-streaming chat.completion body.
func InspectResponse(body []byte) ChunkInfo {
	ci, _ := read(nil, bytesString(body), "message", false, false)
	return ci
}

// ReadChunk is the one reader of Chat Completions chunks: InspectChunk's
// summary, and the parts the chunk carries appended to dst, in the order
// the chat encoder writes them:
//
//	delta.role (or start true)                 -> Start (id, model, created)
//	delta.reasoning_content, delta.reasoning   -> Reasoning
//	delta.content                              -> Text
//	delta.refusal                              -> Refusal
//	delta.tool_calls[i] with an id or name     -> ToolCall{Index: its index}
//	delta.tool_calls[i].function.arguments     -> ToolArgs
//	finish_reason                              -> Finish (as sent)
//	usage                                      -> Usage
//	a second choice, log probabilities, a legacy function_call, audio,
//	annotations, any other non-empty delta member -> Opaque
//
// The parts' strings point into data unless they hold escapes.
func ReadChunk(dst []delta.Part, data []byte, start bool) (ChunkInfo, []delta.Part) {
	return read(dst, bytesString(data), "delta", true, start)
}

// ReadResponse is ReadChunk for a whole chat.completion body (its message
// instead of a delta; Start always comes first).
func ReadResponse(dst []delta.Part, body []byte) (ChunkInfo, []delta.Part) {
	return read(dst, bytesString(body), "message", true, true)
}

// read walks a chunk or body once; with collect it appends its parts.
func read(dst []delta.Part, s, part string, collect, start bool) (ChunkInfo, []delta.Part) {
	var ci ChunkInfo
	if e := gjson.Get(s, "error"); e.Exists() && e.Type != gjson.Null {
		ci.Error = true
		ci.ErrorType = e.Get("type").String()
		if ci.ErrorType == "" {
			ci.ErrorType = e.Get("code").String()
		}
		return ci, dst
	}
	var root gjson.Result
	if collect {
		root = gjson.Parse(s)
		if start {
			dst = appendStart(dst, root)
		}
	}
	n := 0
	gjson.Get(s, "choices").ForEach(func(_, c gjson.Result) bool {
		n++
		// The choice's and the delta's members are read raw (jsonb.Members
		// never decodes a string or a number): the relay neither allocates
		// nor runs a float parser deep in the stack of every stream. Only
		// parts decode text.
		var index, body, finish, logprobs string
		jsonb.Members(c.Raw, func(k, v string) bool {
			switch k {
			case "index":
				index = v
			case part:
				body = v
			case "finish_reason":
				finish = v
			case "logprobs":
				logprobs = v
			}
			return true
		})
		first := n == 1 && jsonb.Int(index) == 0
		var reasoning, reasoning2, content, refusal, calls string
		opaque := ""
		jsonb.Members(body, func(k, v string) bool {
			switch k {
			case "role":
				if collect && !start && first {
					dst = appendStart(dst, root)
				}
			case "content":
				content = v
			case "reasoning_content":
				reasoning = v
			case "reasoning":
				reasoning2 = v
			case "refusal":
				refusal = v
			case "tool_calls":
				calls = v
			case "function_call":
				if v[0] == '{' {
					ci.Content, ci.ToolCalls = true, true
				}
				if nonEmptyRaw(v) {
					opaque = "function_call"
				}
			default: // audio, annotations, ...
				if nonEmptyRaw(v) {
					opaque = k
				}
			}
			return true
		})
		for _, f := range [...]struct {
			raw  string
			kind delta.Kind
		}{{reasoning, delta.Reasoning}, {reasoning2, delta.Reasoning}, {content, delta.Text}, {refusal, delta.Refusal}} {
			if len(f.raw) > 2 && f.raw[0] == '"' {
				ci.Content = true
				ci.Chars += jsonb.Chars(f.raw)
				if collect && first {
					dst = append(dst, delta.Part{Kind: f.kind, Text: decoded(f.raw)})
				}
			}
		}
		if len(calls) > 0 && calls[0] == '[' {
			i := 0
			gjson.Parse(calls).ForEach(func(_, call gjson.Result) bool {
				ci.Content, ci.ToolCalls = true, true
				var name, args string
				jsonb.Members(call.Get("function").Raw, func(k, v string) bool {
					switch k {
					case "name":
						name = v
					case "arguments":
						args = v
					}
					return true
				})
				ci.Chars += jsonb.Chars(args) + jsonb.Chars(name)
				if collect && first {
					idx := i
					if ix := call.Get("index"); ix.Exists() {
						idx = int(ix.Int())
					}
					if id, name := call.Get("id").Str, decoded(name); id != "" || name != "" {
						dst = append(dst, delta.Part{Kind: delta.ToolCall, Index: idx, ID: id, Name: name})
					}
					if args := decoded(args); args != "" {
						dst = append(dst, delta.Part{Kind: delta.ToolArgs, Index: idx, Text: args})
					}
				}
				i++
				return true
			})
		}
		isFinish := len(finish) >= 2 && finish[0] == '"'
		if isFinish {
			ci.Finish = true
			ci.FinishReason = knownFinish(decoded(finish))
		}
		if collect {
			switch {
			case !first:
				dst = append(dst, delta.Part{Kind: delta.Opaque, Name: "choices"})
			case nonEmptyRaw(logprobs):
				dst = append(dst, delta.Part{Kind: delta.Opaque, Name: "logprobs"})
			case opaque != "":
				dst = append(dst, delta.Part{Kind: delta.Opaque, Name: opaque})
			}
			if first && isFinish {
				f := ci.FinishReason // a constant when it is one of OpenAI's
				if f == "" {
					f = decoded(finish)
				}
				dst = append(dst, delta.Part{Kind: delta.Finish, Finish: f})
			}
		}
		return true
	})
	if u := gjson.Get(s, "usage"); u.IsObject() {
		ci.HasUsage = true
		ci.UsageOnly = n == 0
		ci.Usage.PromptTokens = int(u.Get("prompt_tokens").Int())
		ci.Usage.CompletionTokens = int(u.Get("completion_tokens").Int())
		ci.Usage.TotalTokens = int(u.Get("total_tokens").Int())
		if c := u.Get("prompt_tokens_details.cached_tokens"); c.Exists() {
			ci.Usage.PromptTokensDetails = &PromptTokensDetails{CachedTokens: int(c.Int()),
				CacheCreationTokens: int(u.Get("prompt_tokens_details.cache_creation_tokens").Int())}
		}
		if st := gjson.Get(s, "service_tier"); st.Type == gjson.String {
			ci.ServiceTier = strings.Clone(st.Str)
		}
		if collect {
			dst = append(dst, delta.Part{Kind: delta.Usage, Usage: delta.Tokens{
				Input: ci.Usage.PromptTokens, Output: ci.Usage.CompletionTokens,
				CacheRead:  int(u.Get("prompt_tokens_details.cached_tokens").Int()),
				CacheWrite: int(u.Get("prompt_tokens_details.cache_creation_tokens").Int()),
				Reasoning:  int(u.Get("completion_tokens_details.reasoning_tokens").Int()), Tier: ci.ServiceTier}})
		}
	}
	return ci, dst
}

// appendStart appends the Start part of a chunk or body.
func appendStart(dst []delta.Part, root gjson.Result) []delta.Part {
	return append(dst, delta.Part{Kind: delta.Start, ID: root.Get("id").Str, Name: root.Get("model").Str, Created: root.Get("created").Int()})
}

// decoded is the text of a raw JSON string literal ("" for anything
// else); it points into raw unless the literal holds escapes.
func decoded(raw string) string {
	if len(raw) < 2 || raw[0] != '"' {
		return ""
	}
	return gjson.Parse(raw).Str
}

// nonEmptyRaw is nonEmpty for a value's raw text.
func nonEmptyRaw(v string) bool {
	switch v {
	case "", "null", "false", `""`:
		return false
	}
	if v[0] == '{' || v[0] == '[' {
		n := 0
		jsonb.Members(v, func(_, _ string) bool { n++; return false })
		if v[0] == '[' {
			return len(strings.TrimSpace(v[1:len(v)-1])) > 0
		}
		return n > 0
	}
	return true
}

// knownFinish returns reason as a constant string (never a view into the
// inspected bytes) when it is one of OpenAI's finish reasons.
func knownFinish(reason string) string {
	for _, k := range [...]string{"stop", "length", "tool_calls", "content_filter", "function_call"} {
		if reason == k {
			return k
		}
	}
	return ""
}
