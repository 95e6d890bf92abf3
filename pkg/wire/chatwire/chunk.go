package chatwire

import (
	"unicode/utf8"
	"unsafe"

	"github.com/tidwall/gjson"
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
	Chars   int  // characters of generated text and tool arguments, for estimates
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
// frame) without allocating in the common case.
func InspectChunk(data []byte) ChunkInfo {
	return inspect(bytesString(data), "delta")
}

// InspectResponse reads a non-streaming chat.completion body.
func InspectResponse(body []byte) ChunkInfo {
	return inspect(bytesString(body), "message")
}

func inspect(s, part string) ChunkInfo {
	var ci ChunkInfo
	if e := gjson.Get(s, "error"); e.Exists() && e.Type != gjson.Null {
		ci.Error = true
		ci.ErrorType = e.Get("type").String()
		if ci.ErrorType == "" {
			ci.ErrorType = e.Get("code").String()
		}
		return ci
	}
	choices := gjson.Get(s, "choices")
	n := 0
	choices.ForEach(func(_, c gjson.Result) bool {
		n++
		d := c.Get(part)
		for _, f := range [...]string{"content", "refusal", "reasoning_content", "reasoning"} {
			if v := d.Get(f); v.Type == gjson.String && len(v.Raw) > 2 {
				ci.Content = true
				ci.Chars += utf8.RuneCountInString(v.Raw) - 2
			}
		}
		if tc := d.Get("tool_calls"); tc.IsArray() {
			tc.ForEach(func(_, call gjson.Result) bool {
				ci.Content, ci.ToolCalls = true, true
				ci.Chars += len(call.Get("function.arguments").Raw) + len(call.Get("function.name").Raw)
				return true
			})
		}
		if fc := d.Get("function_call"); fc.IsObject() {
			ci.Content, ci.ToolCalls = true, true
		}
		if fr := c.Get("finish_reason"); fr.Type == gjson.String {
			ci.Finish = true
			ci.FinishReason = knownFinish(fr.Str)
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
			ci.Usage.PromptTokensDetails = &PromptTokensDetails{CachedTokens: int(c.Int())}
		}
	}
	return ci
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
