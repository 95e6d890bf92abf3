package telemetry

import (
	"encoding/json"
	"strings"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/llmgw/llmgw/pkg/exchange"
)

// maxContent bounds the text of one direction (input or output) that a
// span event carries; longer text is cut and marked.
const maxContent = 32 << 10

// Content is a request's prompt and completion, for the routes that opt
// in (trace_content): the GenAI event
// gen_ai.client.inference.operation.details with gen_ai.system_instructions,
// gen_ai.input.messages and gen_ai.output.messages, in the conventions'
// JSON message shape. Never built for other routes.
type Content struct {
	System, Input, Output string
}

// part is one message part of the GenAI message shape.
type part struct {
	Type    string `json:"type"`
	Content string `json:"content"`
}

type message struct {
	Role         string `json:"role"`
	Parts        []part `json:"parts"`
	FinishReason string `json:"finish_reason,omitempty"`
}

// contentOf builds the Content of a request: its text blocks (media and
// tool payloads are left out) and the output text the relay saw.
func contentOf(req *exchange.Request, output string, finish []string) *Content {
	c := &Content{}
	if req != nil && req.Prompt != nil {
		var sys []part
		for _, b := range req.Prompt.System {
			if b.Text != "" {
				sys = append(sys, part{Type: "text", Content: b.Text})
			}
		}
		if len(sys) > 0 {
			c.System = marshalCapped(sys)
		}
		msgs := []message{}
		for _, m := range req.Prompt.Messages {
			mm := message{Role: string(m.Role), Parts: []part{}}
			for _, b := range m.Content {
				if b.Text != "" {
					mm.Parts = append(mm.Parts, part{Type: "text", Content: b.Text})
				}
			}
			msgs = append(msgs, mm)
		}
		c.Input = marshalCapped(msgs)
	}
	out := message{Role: "assistant", Parts: []part{{Type: "text", Content: capped(output)}}}
	if len(finish) > 0 {
		out.FinishReason = finish[len(finish)-1]
	}
	c.Output = marshalCapped([]message{out})
	return c
}

func capped(s string) string {
	if len(s) <= maxContent {
		return s
	}
	cut := maxContent
	for cut > 0 && !utf8Start(s[cut]) {
		cut--
	}
	return s[:cut] + "…[truncated]"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

func marshalCapped(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 2*maxContent {
		return `[{"type":"text","content":"[truncated]"}]`
	}
	return string(b)
}

func (c *Content) event(at time.Time) *tracepb.Span_Event {
	ev := &tracepb.Span_Event{Name: EventContent, TimeUnixNano: unixNano(at)}
	if c.System != "" {
		ev.Attributes = append(ev.Attributes, str(AttrSystemInstr, c.System))
	}
	if c.Input != "" {
		ev.Attributes = append(ev.Attributes, str(AttrInputMessages, c.Input))
	}
	ev.Attributes = append(ev.Attributes, str(AttrOutputMessage, c.Output))
	return ev
}

// textTap collects the output text of one request (opted-in routes only).
type textTap struct {
	b strings.Builder
}

func (t *textTap) add(ev *exchange.Event) {
	if ev.Kind == exchange.Text && t.b.Len() < maxContent {
		t.b.WriteString(ev.Text)
	}
}
