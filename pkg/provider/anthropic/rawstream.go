package anthropic

import (
	"bytes"
	"io"

	"github.com/tidwall/gjson"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/provider"
	"github.com/llmgw/llmgw/pkg/sse"
	"github.com/llmgw/llmgw/pkg/wire/messageswire"
)

// rawStream relays an Anthropic event stream frame by frame (see
// passthrough.go for the flags). It rebuilds each frame into one reused
// buffer: "event: <name>\n", one "data: " line per data line, "\n".
type rawStream struct {
	prov     string
	body     io.ReadCloser
	r        *sse.Reader
	reqBytes int
	trace    *exchange.Trace
	frame    []byte

	started, finished, stopped, gotDelta bool
	u                                    messageswire.Usage
	chars                                int
}

func newReader(body io.Reader) *sse.Reader { return sse.NewReader(body, 0) }

// usageOf reads a usage object.
func usageOf(u gjson.Result) messageswire.Usage {
	return messageswire.Usage{InputTokens: int(u.Get("input_tokens").Int()), OutputTokens: int(u.Get("output_tokens").Int()),
		CacheCreationInputTokens: int(u.Get("cache_creation_input_tokens").Int()), CacheReadInputTokens: int(u.Get("cache_read_input_tokens").Int())}
}

// Next implements provider.Stream.
func (s *rawStream) Next() (exchange.Event, error) {
	for {
		if s.stopped {
			return exchange.Event{}, io.EOF
		}
		f, err := s.r.Next()
		if err != nil {
			if err == io.EOF {
				return exchange.Event{}, provider.Interrupted(s.prov, "ended before message_stop", nil)
			}
			return exchange.Event{}, provider.Interrupted(s.prov, "broke off", err)
		}
		name := bytesString(f.Event)
		if name == messageswire.EventError {
			return exchange.Event{}, provider.InBandError(s.prov, gjson.GetBytes(f.Data, "error.type").Str)
		}
		if len(f.Data) == 0 {
			continue // an event line without data carries nothing to relay
		}
		if !gjson.ValidBytes(f.Data) {
			s.trace.MalformedFrames++
			continue
		}
		doc := gjson.ParseBytes(f.Data)
		if name == "" {
			name = doc.Get("type").Str
		}
		ev := exchange.Event{Kind: exchange.Raw, RawAPI: exchange.Messages}
		switch name {
		case messageswire.EventError:
			return exchange.Event{}, provider.InBandError(s.prov, doc.Get("error.type").Str)
		case messageswire.EventMessageStart:
			if !s.started {
				s.started = true
				s.u = usageOf(doc.Get("message.usage"))
			}
		case messageswire.EventContentBlockStart:
			if cb := doc.Get("content_block"); blockHasContent(cb) {
				ev.Flags |= exchange.HasContent
				s.chars += len(cb.Get("name").Str) + len(cb.Get("text").Str) + len(cb.Get("thinking").Str)
			}
		case messageswire.EventContentBlockDelta:
			d := doc.Get("delta")
			n := 0
			d.ForEach(func(k, v gjson.Result) bool {
				if k.Str != "type" && (v.Type != gjson.String || v.Str != "") {
					n += max(1, len(v.Str))
				}
				return true
			})
			if n > 0 {
				ev.Flags |= exchange.HasContent
				s.chars += n
			}
		case messageswire.EventMessageDelta:
			var du messageswire.DeltaUsage
			u := doc.Get("usage")
			for _, f := range []struct {
				key string
				dst **int
			}{{"input_tokens", &du.InputTokens}, {"output_tokens", &du.OutputTokens},
				{"cache_read_input_tokens", &du.CacheReadInputTokens}, {"cache_creation_input_tokens", &du.CacheCreationInputTokens}} {
				if v := u.Get(f.key); v.Type == gjson.Number {
					n := int(v.Int())
					*f.dst = &n
				}
			}
			if mergeDeltaUsage(&s.u, &du) {
				s.gotDelta = true
			}
			if stop := doc.Get("delta.stop_reason").Str; stop != "" {
				s.finished = true
				ev.Flags |= exchange.HasFinish
				ev.Finish, ev.Stop = finishReason(stop), stop
				ev.StopSequence = doc.Get("delta.stop_sequence").Str
			}
		case messageswire.EventMessageStop:
			if !s.finished {
				return exchange.Event{}, provider.Interrupted(s.prov, "reached message_stop without a stop_reason", nil)
			}
			s.stopped = true
		}
		ev.Raw = s.rebuild(f)
		return ev, nil
	}
}

// rebuild writes a frame back as the upstream sent it.
func (s *rawStream) rebuild(f sse.Frame) []byte {
	b := s.frame[:0]
	if len(f.Event) > 0 {
		b = append(b, "event: "...)
		b = append(b, f.Event...)
		b = append(b, '\n')
	}
	data := f.Data
	for {
		line, rest, more := bytes.Cut(data, []byte{'\n'})
		b = append(b, "data: "...)
		b = append(b, line...)
		b = append(b, '\n')
		if !more {
			break
		}
		data = rest
	}
	s.frame = append(b, '\n')
	return s.frame
}

// Usage implements provider.Stream.
func (s *rawStream) Usage() exchange.TokenUsage {
	return streamUsage(s.started, s.gotDelta, s.u, s.reqBytes, s.chars)
}

// Close implements provider.Stream.
func (s *rawStream) Close() error { return s.body.Close() }
