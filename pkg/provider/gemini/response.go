package gemini

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"unicode/utf8"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/provider"
)

// Response translation, Gemini GenerateContentResponse -> canonical
// events. A whole response and each SSE chunk of a stream are the same
// object, read the same way (only candidate 0: the adapter asks for one):
//
//	the first chunk (responseId, modelVersion) -> Start{ID, Name, Created: time of the call}
//	text part                   -> Text
//	text part with thought true -> Reasoning (thought summaries)
//	a part's thoughtSignature   -> Signature{Text: SignaturePrefix + signature}, before the
//	                               part's own events, when the client asked for thinking
//	functionCall part           -> ToolCall{Index: i, ID, Name}, then ToolArgs{Index: i,
//	                               Text: the whole args object as compact JSON, "{}" when
//	                               absent}; i counts function calls 0, 1, 2... across the
//	                               response, ID is the call's id or a generated call_<hex>
//	finishReason                -> Finish (see finishReason)
//	promptFeedback.blockReason without candidates -> Finish content_filter
//	usageMetadata               -> the usage (the last seen wins; see tokenUsage), sent as
//	                               Usage after the finish
//	an error object             -> provider.InBandError classification (see errors.go)
//
// Other parts (inline media, code execution) give nothing. A whole
// response with no text, no function call, no output tokens and no
// content_filter finish is provider.EmptyResponse.

// finishReason maps a Gemini finishReason to the canonical one: STOP is
// tool_calls when the answer called a function; MAX_TOKENS is length; the
// safety and policy stops are content_filter; the rest (OTHER, LANGUAGE,
// MALFORMED_FUNCTION_CALL, ...) are stop, their name kept as the raw stop.
func finishReason(reason string, calledTools bool) string {
	switch reason {
	case "MAX_TOKENS":
		return exchange.FinishLength
	case "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY",
		"IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION":
		return exchange.FinishContentFilter
	}
	if calledTools {
		return exchange.FinishToolCalls
	}
	return exchange.FinishStop
}

// tokenUsage maps usageMetadata to the gateway's: input is the prompt
// (cached tokens included) and tool-use prompt tokens; output is the
// candidates' tokens and the thoughts' (both billed as output).
func tokenUsage(u usageMetadata) exchange.TokenUsage {
	return exchange.TokenUsage{Input: u.PromptTokenCount + u.ToolUsePromptTokenCount,
		Output: u.CandidatesTokenCount + u.ThoughtsTokenCount, CacheRead: u.CachedContentTokenCount,
		Reasoning: u.ThoughtsTokenCount}
}

// events is the translation state of one response.
type events struct {
	prov     string
	created  int64
	reqBytes int

	// signatures: send each part's thoughtSignature on as a Signature
	// event (the client asked for thinking, so it has a block to keep it
	// in).
	signatures bool

	started  bool
	finished bool
	calls    int  // function calls seen
	content  bool // text or a function call seen
	filtered bool // a content_filter finish
	hasUsage bool
	u        usageMetadata
	chars    int
	// grounded: an answer grounded with Google Search; queries the most
	// search queries a response object named (a stream may repeat them).
	grounded bool
	queries  int
	queue    []exchange.Event
}

func (t *events) push(ev exchange.Event) { t.queue = append(t.queue, ev) }

// pop returns the next queued event.
func (t *events) pop() (exchange.Event, bool) {
	if len(t.queue) == 0 {
		return exchange.Event{}, false
	}
	ev := t.queue[0]
	t.queue = t.queue[1:]
	return ev, true
}

// callID is a tool call id for a function call that came without one.
func callID() string {
	var b [12]byte
	rand.Read(b[:])
	return "call_" + hex.EncodeToString(b[:])
}

// read translates one response object into queued events.
func (t *events) read(r *response) error {
	if r.Error != nil {
		return classify(t.prov, 0, *r.Error, nil, "")
	}
	if !t.started {
		t.started = true
		id := r.ResponseID
		if id == "" {
			id = callID()[5:]
		}
		t.push(exchange.Event{Kind: exchange.Start, ID: id, Name: r.ModelVersion, Created: t.created})
	}
	if r.UsageMetadata != nil {
		t.hasUsage, t.u = true, *r.UsageMetadata
	}
	if len(r.Candidates) == 0 {
		if pf := r.PromptFeedback; pf != nil && pf.BlockReason != "" && !t.finished {
			t.finished, t.filtered = true, true
			t.push(exchange.Event{Kind: exchange.Finish, Finish: exchange.FinishContentFilter, Stop: pf.BlockReason})
		}
		return nil
	}
	c := r.Candidates[0]
	if g := c.GroundingMetadata; g.Grounded() {
		t.grounded, t.queries = true, max(t.queries, len(g.WebSearchQueries))
	}
	if c.Content != nil && !t.finished {
		for _, p := range c.Content.Parts {
			t.part(p)
		}
	}
	if c.FinishReason != "" && !t.finished {
		t.finished = true
		f := finishReason(c.FinishReason, t.calls > 0)
		t.filtered = f == exchange.FinishContentFilter
		t.push(exchange.Event{Kind: exchange.Finish, Finish: f, Stop: c.FinishReason})
	}
	return nil
}

// part translates one part. Its thoughtSignature, when the client asked
// for thinking, comes first: a Signature event, SignaturePrefix and the
// signature, which the client sends back on the thinking block that ends
// before this part (see content.go).
func (t *events) part(p part) {
	if p.ThoughtSignature != "" && t.signatures {
		t.push(exchange.Event{Kind: exchange.Signature, Text: SignaturePrefix + p.ThoughtSignature})
	}
	switch {
	case p.FunctionCall != nil:
		fc := p.FunctionCall
		id := fc.ID
		if id == "" {
			id = callID()
		}
		args := "{}"
		if a := bytes.TrimSpace(fc.Args); len(a) > 0 && string(a) != "null" {
			var c bytes.Buffer
			if json.Compact(&c, a) == nil {
				args = c.String()
			}
		}
		t.push(exchange.Event{Kind: exchange.ToolCall, Index: t.calls, ID: id, Name: fc.Name})
		t.push(exchange.Event{Kind: exchange.ToolArgs, Index: t.calls, Text: args})
		t.calls++
		t.content = true
		t.chars += len(fc.Name) + len(args)
	case p.Text != "" && p.Thought:
		t.chars += utf8.RuneCountInString(p.Text)
		t.push(exchange.Event{Kind: exchange.Reasoning, Text: p.Text})
	case p.Text != "":
		t.content = true
		t.chars += utf8.RuneCountInString(p.Text)
		t.push(exchange.Event{Kind: exchange.Text, Text: p.Text})
	}
}

// usage returns the figures so far: the upstream's, else an estimate,
// with the grounding the answer used (one grounded prompt, its search
// queries as web searches: Gemini 2 models bill the one, Gemini 3 the
// other, priced as config.FeeGroundedPrompt and config.FeeWebSearch).
func (t *events) usage() exchange.TokenUsage {
	u := exchange.TokenUsage{Input: exchange.EstimateTokens(t.reqBytes), Output: exchange.EstimateTokens(t.chars), Estimated: true}
	if t.hasUsage {
		u = tokenUsage(t.u)
	}
	if t.grounded {
		u.Tools = exchange.ToolCalls{GroundedPrompts: 1, WebSearch: t.queries}
	}
	return u
}

// translateResponse turns a whole generateContent body into events.
func translateResponse(prov string, data []byte, reqBytes int, created int64, signatures bool) ([]exchange.Event, exchange.TokenUsage, error) {
	var r response
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, exchange.TokenUsage{}, &gwerr.Error{Category: gwerr.Unavailable, Message: "provider returned malformed JSON", Provider: prov, Cause: err}
	}
	t := &events{prov: prov, created: created, reqBytes: reqBytes, signatures: signatures}
	if err := t.read(&r); err != nil {
		return nil, exchange.TokenUsage{}, err
	}
	u := t.usage()
	if !t.content && !t.filtered && u.Output == 0 {
		return nil, exchange.TokenUsage{}, provider.EmptyResponse(prov)
	}
	if !t.finished {
		t.push(exchange.Event{Kind: exchange.Finish, Finish: finishReason("", t.calls > 0)})
	}
	t.push(exchange.Event{Kind: exchange.Usage, Usage: u})
	return t.queue, u, nil
}
