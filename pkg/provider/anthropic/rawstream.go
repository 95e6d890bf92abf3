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

// rawStream relays an Anthropic event stream frame by frame, read by
// messageswire.InspectEvent (see passthrough.go for the flags). It rebuilds each frame into one reused
// buffer: "event: <name>\n", one "data: " line per data line, "\n".
type rawStream struct {
	prov     string
	body     io.ReadCloser
	r        *sse.Reader
	reqBytes int
	trace    *exchange.Trace
	frame    []byte

	st    messageswire.StreamState
	chars int
}

func newReader(body io.Reader) *sse.Reader { return sse.NewReader(body, 0) }

// Next implements provider.Stream.
func (s *rawStream) Next() (exchange.Event, error) {
	for {
		if s.st.Stopped {
			return exchange.Event{}, io.EOF
		}
		f, err := s.r.Next()
		if err != nil {
			if err == io.EOF {
				return exchange.Event{}, provider.Interrupted(s.prov, "ended before message_stop", nil)
			}
			return exchange.Event{}, provider.Interrupted(s.prov, "broke off", err)
		}
		if string(f.Event) == messageswire.EventError {
			return exchange.Event{}, provider.InBandError(s.prov, messageswire.InspectEvent(f.Event, f.Data).ErrorType)
		}
		if len(f.Data) == 0 {
			continue // an event line without data carries nothing to relay
		}
		if !gjson.ValidBytes(f.Data) {
			s.trace.MalformedFrames++
			continue
		}
		ei := messageswire.InspectEvent(f.Event, f.Data)
		ev := exchange.Event{Kind: exchange.Raw, RawAPI: exchange.Messages}
		if ei.Content {
			ev.Flags |= exchange.HasContent
		}
		s.chars += ei.Chars
		if ei.Type == messageswire.EventError {
			return exchange.Event{}, provider.InBandError(s.prov, ei.ErrorType)
		}
		if _, err := s.st.Apply(&ei); err != nil {
			return exchange.Event{}, provider.MessagesStreamError(s.prov, err)
		}
		if ei.Type == messageswire.EventMessageDelta && ei.StopReason != "" {
			ev.Flags |= exchange.HasFinish
			ev.Finish, ev.Stop, ev.StopSequence = messageswire.FinishReason(ei.StopReason), ei.StopReason, ei.StopSequence
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
	return provider.MessagesStreamUsage(&s.st, s.reqBytes, s.chars)
}

// Close implements provider.Stream.
func (s *rawStream) Close() error { return s.body.Close() }
