package cache

import (
	"bytes"
	"compress/flate"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/llmgw/llmgw/pkg/exchange"
)

// Entry is a stored answer: its canonical events with their relative
// timing, the target that generated it and the usage it cost. It holds
// the completion (the text of the answer) but never the prompt.
type Entry struct {
	// API is the client API of the request (part of the key too).
	API exchange.API `json:"api"`
	// Target and Provider served the original request.
	Target   string `json:"target"`
	Provider string `json:"provider"`
	// Usage is what the original request consumed.
	Usage exchange.TokenUsage `json:"usage"`
	// Events are the answer's events in order.
	Events []Stored `json:"events"`
}

// Stored is one canonical event as stored, with the time since the
// previous event. Response ids are not stored (a replay makes new ones);
// a tool call keeps only its id's prefix ("call_", "toolu_").
type Stored struct {
	Kind         exchange.Kind        `json:"k"`
	Text         string               `json:"t,omitempty"`
	Index        int                  `json:"i,omitempty"`
	ID           string               `json:"id,omitempty"`
	Name         string               `json:"n,omitempty"`
	Finish       string               `json:"f,omitempty"`
	Stop         string               `json:"s,omitempty"`
	StopSequence string               `json:"ss,omitempty"`
	Usage        *exchange.TokenUsage `json:"u,omitempty"`
	// GapMicros is the time since the previous event, in microseconds.
	GapMicros int64 `json:"g,omitempty"`
}

// toStored converts a canonical event (never Raw) for storage. Its strings
// are copied: a decoded frame's point into the upstream's read buffer.
func toStored(ev *exchange.Event, gapMicros int64) Stored {
	s := Stored{Kind: ev.Kind, Text: strings.Clone(ev.Text), Index: ev.Index, Name: strings.Clone(ev.Name),
		Finish: strings.Clone(ev.Finish), Stop: strings.Clone(ev.Stop), StopSequence: strings.Clone(ev.StopSequence), GapMicros: gapMicros}
	switch ev.Kind {
	case exchange.ToolCall:
		s.ID = strings.Clone(idPrefix(ev.ID))
	case exchange.Usage:
		u := ev.Usage
		s.Usage = &u
	}
	return s
}

// event is the stored event as a canonical one.
func (s *Stored) event() exchange.Event {
	ev := exchange.Event{Kind: s.Kind, Text: s.Text, Index: s.Index, ID: s.ID, Name: s.Name,
		Finish: s.Finish, Stop: s.Stop, StopSequence: s.StopSequence}
	if s.Usage != nil {
		ev.Usage = *s.Usage
	}
	return ev
}

// size is about what s costs in the entry, before compression.
func (s *Stored) size() int {
	return 48 + len(s.Text) + len(s.ID) + len(s.Name) + len(s.Stop) + len(s.StopSequence)
}

// idPrefix keeps the part of an id up to its first "_" ("call_abc" ->
// "call_"); ids without one get "call_".
func idPrefix(id string) string {
	if i := strings.IndexByte(id, '_'); i > 0 && i < 16 {
		return id[:i+1]
	}
	return "call_"
}

// codecVersion is the first byte of a stored entry: raw DEFLATE of its JSON.
const codecVersion = 1

var errCodec = errors.New("cache: unknown entry encoding")

// encode compresses an entry.
func encode(e *Entry) ([]byte, error) {
	js, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteByte(codecVersion)
	zw, err := flate.NewWriter(&b, flate.DefaultCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(js); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// decode reads an entry back; limit bounds its uncompressed size.
func decode(data []byte, limit int64) (*Entry, error) {
	if len(data) == 0 || data[0] != codecVersion {
		return nil, errCodec
	}
	zr := flate.NewReader(bytes.NewReader(data[1:]))
	defer zr.Close()
	js, err := io.ReadAll(io.LimitReader(zr, limit+1))
	if err != nil {
		return nil, fmt.Errorf("cache: entry: %w", err)
	}
	if int64(len(js)) > limit {
		return nil, fmt.Errorf("cache: entry exceeds %d bytes uncompressed", limit)
	}
	var e Entry
	if err := json.Unmarshal(js, &e); err != nil {
		return nil, fmt.Errorf("cache: entry: %w", err)
	}
	return &e, nil
}
