package provider

import (
	"io"

	"github.com/llmgw/llmgw/pkg/exchange"
)

// Events returns a Stream over events already in hand: a whole
// non-streaming response, translated or passed through.
func Events(u exchange.TokenUsage, evs ...exchange.Event) Stream {
	return &events{evs: evs, usage: u}
}

type events struct {
	evs   []exchange.Event
	usage exchange.TokenUsage
}

func (s *events) Next() (exchange.Event, error) {
	if len(s.evs) == 0 {
		return exchange.Event{}, io.EOF
	}
	e := s.evs[0]
	s.evs = s.evs[1:]
	return e, nil
}

func (s *events) Usage() exchange.TokenUsage { return s.usage }
func (s *events) Close() error               { return nil }
