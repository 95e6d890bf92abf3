// Package provider defines the one small interface every upstream adapter
// implements, and the types that cross it. An adapter turns one attempt (a
// Call) into a Stream of OpenAI-shaped frames; everything about retries,
// fallbacks, breakers and timeouts lives in the failover package and never
// needs to know which kind of provider it is talking to.
package provider

import (
	"context"
	"net/http"

	"github.com/llmgw/llmgw/pkg/keyledger"
	"github.com/llmgw/llmgw/pkg/openaiwire"
)

// Provider sends one attempt to one upstream.
//
// Send returns once the upstream has answered with a success status (and,
// for non-streaming calls, the whole body), or with an error. Errors are
// *gwerr.Error with a category; Send never retries. Cancelling ctx must
// abort the call promptly, including a Stream returned earlier.
type Provider interface {
	Send(ctx context.Context, call *Call) (Stream, error)
}

// Call is one attempt at one target.
type Call struct {
	// Req is the validated client request; Body is its raw bytes, which
	// OpenAI-compatible adapters forward with only the model rewritten.
	Req  *openaiwire.ChatRequest
	Body []byte
	// Model is the upstream model id of the target.
	Model string
	// MaxTokens is the default for providers that require max_tokens.
	MaxTokens int
	// CapOutputTokens, when > 0, is the output the request was admitted
	// for while the client gave no max tokens: adapters whose API does not
	// require max tokens must send it anyway (those that do use MaxTokens,
	// which is already capped).
	CapOutputTokens int
	// Key is the credential to use; zero when the provider has none or
	// authenticates otherwise (bedrock uses the AWS credential chain).
	Key keyledger.Key
	// OnResponse, when set, is called with the upstream status and headers
	// of every response (success or error), before Send returns. The key
	// ledger reads rate-limit headers from it.
	OnResponse func(status int, h http.Header)
}

// Stream yields the frames of one upstream response, translated into the
// OpenAI wire format.
//
// For a streaming call each frame is the JSON of one chat.completion.chunk.
// For a non-streaming call there is exactly one frame: the whole
// chat.completion body. Next returns io.EOF only after the upstream's
// terminal event (a finish reason and, for SSE, [DONE]); a stream that ends
// any other way returns an *gwerr.Error (category interrupted, or the
// upstream's in-band error), never io.EOF.
type Stream interface {
	Next() (Frame, error)
	// Usage returns the tokens counted so far (from the upstream's figures,
	// or estimated from the text seen when it gave none).
	Usage() Usage
	// Close releases the connection. It is safe to call more than once.
	Close() error
}

// Frame is one unit of output. Data is valid until the next call to Next.
type Frame struct {
	Data []byte
	// Content is true when the frame carries generated output (text,
	// refusal, reasoning or a tool call): the first such frame commits the
	// response to this target.
	Content bool
	// Finish is true when the frame carries a finish reason.
	Finish bool
	// UsageOnly marks the include_usage chunk (choices empty, usage set).
	// The gateway always asks for it and drops it unless the client asked.
	UsageOnly bool
}

// Usage counts one attempt's tokens.
type Usage struct {
	Input      int  `json:"input_tokens"`
	Output     int  `json:"output_tokens"`
	CacheRead  int  `json:"cache_read_tokens,omitempty"`
	CacheWrite int  `json:"cache_write_tokens,omitempty"`
	Estimated  bool `json:"estimated,omitempty"`
}

// OpenAI returns the usage in the OpenAI shape.
func (u Usage) OpenAI() *openaiwire.Usage {
	ou := &openaiwire.Usage{PromptTokens: u.Input, CompletionTokens: u.Output, TotalTokens: u.Input + u.Output}
	if u.CacheRead > 0 || u.CacheWrite > 0 {
		ou.PromptTokensDetails = &openaiwire.PromptTokensDetails{CachedTokens: u.CacheRead, CacheCreationTokens: u.CacheWrite}
	}
	return ou
}

// EstimateTokens is the gateway's documented token estimator for text whose
// usage a provider did not report: one token per four characters, rounded
// up. It is deliberately simple and marked as an estimate wherever used.
func EstimateTokens(chars int) int { return (chars + 3) / 4 }

// SetKeyHeader puts a provider key in the header an adapter is configured
// for: "authorization" sends it as a Bearer token, any other name (x-api-key,
// api-key) carries the key as it is. No key, no header: never an empty
// "Bearer ".
func SetKeyHeader(h http.Header, header string, k keyledger.Key) {
	if k.Secret == "" {
		return
	}
	if header == "authorization" {
		h.Set("Authorization", "Bearer "+k.Secret)
		return
	}
	h.Set(header, k.Secret)
}
