package bedrockwire

import (
	"bytes"
	"encoding/json"
	"io"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/tidwall/gjson"

	"github.com/llmgw/llmgw/pkg/wire/delta"
)

// The read side of Converse and ConverseStream answers, shared by the
// Bedrock adapter (which relays a Bedrock upstream's answer untouched to a
// Converse client and learns from it what each frame carries) and the
// Bedrock ingress (which reads such frames back into canonical events for
// the response cache and pacing): one frame reader (FrameReader), one
// event reader (ReadEvent) and one body reader (ReadResponse).

// Frame is one application/vnd.amazon.eventstream frame as it arrived:
// Raw holds its bytes exactly (prelude, headers, payload, CRCs), checked;
// Exception is set for an exception frame, whose Type is its
// :exception-type (else Type is the :event-type); Payload is the frame's
// payload (a slice of Raw).
type Frame struct {
	Raw       []byte
	Exception bool
	Type      string
	Payload   []byte
}

// FrameReader reads the frames of an event stream one at a time, each
// decoded by the AWS SDK's eventstream decoder (both CRCs checked) and
// kept byte for byte. Its buffer is reused: a Frame is valid until the
// next call.
type FrameReader struct {
	r   io.Reader
	dec *eventstream.Decoder
	raw bytes.Buffer
	tee io.Reader
}

// NewFrameReader reads frames from r.
func NewFrameReader(r io.Reader) *FrameReader {
	f := &FrameReader{r: r, dec: eventstream.NewDecoder()}
	f.tee = io.TeeReader(r, &f.raw)
	return f
}

// Next returns the next frame; io.EOF at a clean end between frames, any
// other error (a cut inside a frame, a bad CRC) as the decoder reports it.
func (f *FrameReader) Next() (Frame, error) {
	f.raw.Reset()
	m, err := f.dec.Decode(f.tee, nil)
	if err != nil {
		if err == io.EOF && f.raw.Len() > 0 {
			err = io.ErrUnexpectedEOF
		}
		return Frame{}, err
	}
	raw := f.raw.Bytes()
	fr := Frame{Raw: raw, Payload: raw[len(raw)-4-len(m.Payload) : len(raw)-4]}
	if v := m.Headers.Get(":message-type"); v != nil && v.String() == "exception" {
		fr.Exception = true
		if t := m.Headers.Get(":exception-type"); t != nil {
			fr.Type = t.String()
		}
	} else if t := m.Headers.Get(":event-type"); t != nil {
		fr.Type = t.String()
	}
	return fr, nil
}

// ParseFrame reads the one frame raw holds (a Frame.Raw kept from a
// FrameReader); its slices point into raw.
func ParseFrame(raw []byte) (Frame, error) {
	fr, err := NewFrameReader(bytes.NewReader(raw)).Next()
	if err != nil {
		return Frame{}, err
	}
	n := len(fr.Payload)
	fr.Raw = raw
	fr.Payload = raw[len(raw)-4-n : len(raw)-4]
	return fr, nil
}

// EventInfo is what one ConverseStream event (or a whole Converse body)
// carries, for the relay: Content when it holds generated output (a
// non-empty delta, a toolUse block start; a body with any content block),
// Chars its characters of text, reasoning, tool names and input,
// StopReason messageStop's (or the body's) stopReason, Usage the
// metadata event's (or the body's) usage when HasUsage.
type EventInfo struct {
	Content    bool
	Chars      int
	StopReason string
	HasUsage   bool
	Usage      Usage
}

// FinishReason maps a Converse stopReason to the canonical finish reason
// (stop, length, tool_calls, content_filter); reasons newer than this code
// are stop. Malformed output (malformed_model_output, malformed_tool_use)
// is stop here too: the adapter treats it as a provider failure.
func FinishReason(stop string) string {
	switch stop {
	case StopMaxTokens, StopContextWindow:
		return "length"
	case StopToolUse:
		return "tool_calls"
	case StopGuardrailIntervened, StopContentFiltered:
		return "content_filter"
	}
	return "stop"
}

// Malformed reports whether a stopReason says the model's output was
// malformed (a provider failure, never a clean finish).
func Malformed(stop string) bool {
	return stop == StopMalformedModelOutput || stop == StopMalformedToolUse
}

// readUsage reads a TokenUsage object and the serviceTier beside it (in
// the metadata event or the Converse body).
func readUsage(u, tier gjson.Result) Usage {
	out := Usage{Input: int(u.Get("inputTokens").Int()), Output: int(u.Get("outputTokens").Int()),
		CacheRead: int(u.Get("cacheReadInputTokens").Int()), CacheWrite: int(u.Get("cacheWriteInputTokens").Int()),
		Tier: tier.Get("type").String()}
	for _, d := range u.Get("cacheDetails").Array() {
		if d.Get("ttl").String() == "1h" {
			out.CacheWrite1h += int(d.Get("inputTokens").Int())
		}
	}
	return out
}

// usagePart is the canonical usage of a TokenUsage: Input counts every
// prompt token (Bedrock's inputTokens excludes the cached ones).
func usagePart(u Usage) delta.Part {
	return delta.Part{Kind: delta.Usage, Usage: delta.Tokens{Input: u.Input + u.CacheRead + u.CacheWrite, Output: u.Output,
		CacheRead: u.CacheRead, CacheWrite: u.CacheWrite, CacheWrite1h: u.CacheWrite1h, Tier: u.Tier}}
}

// ReadEvent reads one ConverseStream event of type typ (its :event-type)
// with its JSON payload, appending its canonical parts to dst:
//
//	messageStart                      -> Start (no id or model: Converse has none)
//	contentBlockStart toolUse         -> ToolCall (Index: contentBlockIndex, ID, Name)
//	contentBlockDelta text            -> Text
//	contentBlockDelta toolUse.input   -> ToolArgs (Index: contentBlockIndex)
//	contentBlockDelta reasoningContent -> Reasoning (text), Signature, RedactedReasoning (base64)
//	contentBlockDelta of another kind -> Opaque (citations, images, tool results)
//	contentBlockStop                  -> nothing
//	messageStop                       -> Finish (FinishReason, Stop: the stopReason)
//	metadata                          -> Usage
//	any other type                    -> Opaque
func ReadEvent(dst []delta.Part, typ string, payload []byte) (EventInfo, []delta.Part) {
	var ei EventInfo
	p := gjson.ParseBytes(payload)
	switch typ {
	case EventMessageStart:
		dst = append(dst, delta.Part{Kind: delta.Start})
	case EventContentBlockStart:
		idx := int(p.Get("contentBlockIndex").Int())
		if tu := p.Get("start.toolUse"); tu.Exists() {
			name := tu.Get("name").String()
			ei.Content, ei.Chars = true, utf8.RuneCountInString(name)
			dst = append(dst, delta.Part{Kind: delta.ToolCall, Index: idx, ID: tu.Get("toolUseId").String(), Name: name})
		} else if st := p.Get("start"); st.Exists() && len(st.Map()) > 0 {
			ei.Content = true
			dst = append(dst, delta.Part{Kind: delta.Opaque, Name: "contentBlockStart"})
		}
	case EventContentBlockDelta:
		idx := int(p.Get("contentBlockIndex").Int())
		d := p.Get("delta")
		var part delta.Part
		switch {
		case d.Get("text").Exists():
			part = delta.Part{Kind: delta.Text, Text: d.Get("text").String()}
		case d.Get("toolUse").Exists():
			part = delta.Part{Kind: delta.ToolArgs, Index: idx, Text: d.Get("toolUse.input").String()}
		case d.Get("reasoningContent.text").Exists():
			part = delta.Part{Kind: delta.Reasoning, Text: d.Get("reasoningContent.text").String()}
		case d.Get("reasoningContent.signature").Exists():
			part = delta.Part{Kind: delta.Signature, Text: d.Get("reasoningContent.signature").String()}
		case d.Get("reasoningContent.redactedContent").Exists():
			part = delta.Part{Kind: delta.RedactedReasoning, Text: d.Get("reasoningContent.redactedContent").String()}
		default:
			ei.Content = len(d.Map()) > 0
			return ei, append(dst, delta.Part{Kind: delta.Opaque, Name: "contentBlockDelta"})
		}
		if part.Text == "" {
			return ei, dst
		}
		ei.Content = true
		if part.Kind != delta.Signature && part.Kind != delta.RedactedReasoning {
			ei.Chars = utf8.RuneCountInString(part.Text)
		}
		dst = append(dst, part)
	case EventContentBlockStop:
	case EventMessageStop:
		ei.StopReason = p.Get("stopReason").String()
		dst = append(dst, delta.Part{Kind: delta.Finish, Finish: FinishReason(ei.StopReason), Stop: ei.StopReason})
	case EventMetadata:
		if u := p.Get("usage"); u.Exists() {
			ei.HasUsage, ei.Usage = true, readUsage(u, p.Get("serviceTier"))
			dst = append(dst, usagePart(ei.Usage))
		}
	default:
		dst = append(dst, delta.Part{Kind: delta.Opaque, Name: typ})
	}
	return ei, dst
}

// ReadResponse reads a whole Converse response body, appending its
// canonical parts to dst: Start, then each content block of
// output.message in order (text -> Text; toolUse -> ToolCall and ToolArgs
// with its input as compact JSON, Index counting the tool calls;
// reasoningContent -> Reasoning and Signature, or RedactedReasoning; any
// other block -> Opaque), Finish from stopReason, Usage from usage.
func ReadResponse(dst []delta.Part, body []byte) (EventInfo, []delta.Part) {
	var ei EventInfo
	p := gjson.ParseBytes(body)
	dst = append(dst, delta.Part{Kind: delta.Start})
	tools := 0
	for _, b := range p.Get("output.message.content").Array() {
		switch {
		case b.Get("text").Exists():
			t := b.Get("text").String()
			ei.Chars += utf8.RuneCountInString(t)
			if t != "" {
				dst = append(dst, delta.Part{Kind: delta.Text, Text: t})
			}
		case b.Get("toolUse").Exists():
			tu := b.Get("toolUse")
			args := "{}"
			if in := tu.Get("input"); in.Exists() && in.Type != gjson.Null {
				var c bytes.Buffer
				if compact(&c, in.Raw) {
					args = c.String()
				}
			}
			name := tu.Get("name").String()
			ei.Chars += utf8.RuneCountInString(name) + len(args)
			dst = append(dst, delta.Part{Kind: delta.ToolCall, Index: tools, ID: tu.Get("toolUseId").String(), Name: name},
				delta.Part{Kind: delta.ToolArgs, Index: tools, Text: args})
			tools++
		case b.Get("reasoningContent.reasoningText").Exists():
			rt := b.Get("reasoningContent.reasoningText")
			if t := rt.Get("text").String(); t != "" {
				ei.Chars += utf8.RuneCountInString(t)
				dst = append(dst, delta.Part{Kind: delta.Reasoning, Text: t})
			}
			if s := rt.Get("signature").String(); s != "" {
				dst = append(dst, delta.Part{Kind: delta.Signature, Text: s})
			}
		case b.Get("reasoningContent.redactedContent").Exists():
			dst = append(dst, delta.Part{Kind: delta.RedactedReasoning, Text: b.Get("reasoningContent.redactedContent").String()})
		default:
			ei.Chars++
			dst = append(dst, delta.Part{Kind: delta.Opaque, Name: "content block"})
		}
		ei.Content = true
	}
	ei.StopReason = p.Get("stopReason").String()
	dst = append(dst, delta.Part{Kind: delta.Finish, Finish: FinishReason(ei.StopReason), Stop: ei.StopReason})
	if u := p.Get("usage"); u.Exists() {
		ei.HasUsage, ei.Usage = true, readUsage(u, p.Get("serviceTier"))
		dst = append(dst, usagePart(ei.Usage))
	}
	return ei, dst
}

// compact writes the compact form of a JSON value; false when it is not
// valid JSON.
func compact(dst *bytes.Buffer, raw string) bool { return json.Compact(dst, []byte(raw)) == nil }
