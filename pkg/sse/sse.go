// Package sse reads and writes Server-Sent Events as LLM providers and the
// OpenAI SDKs use them: frames of "event:" and "data:" lines ended by a blank
// line. The reader reuses its buffers, so relaying a frame costs no
// allocation.
package sse

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// ErrFrameTooLarge is returned when one frame exceeds the reader's limit.
var ErrFrameTooLarge = errors.New("sse: frame exceeds size limit")

// Frame is one event. Its slices are valid until the next call to Next.
type Frame struct {
	Event []byte // the event type, empty when the frame has no event line
	Data  []byte // the data lines joined by "\n"
}

// Reader reads frames from a stream.
type Reader struct {
	br      *bufio.Reader
	max     int
	event   []byte
	data    []byte
	hasData bool
}

// NewReader returns a Reader whose frames may be at most max bytes
// (0 means 4 MiB).
func NewReader(r io.Reader, max int) *Reader {
	if max <= 0 {
		max = 4 << 20
	}
	return &Reader{br: bufio.NewReaderSize(r, 4<<10), max: max}
}

// Next returns the next frame that has data or an event type. At the end of
// the stream it returns io.EOF, or io.ErrUnexpectedEOF when the stream ended
// in the middle of a frame: a cut stream is never reported as a clean end.
func (r *Reader) Next() (Frame, error) {
	r.event = r.event[:0]
	r.data = r.data[:0]
	r.hasData = false
	partial := false
	for {
		line, err := r.readLine()
		if err != nil {
			if err == io.EOF && len(line) == 0 && r.hasData {
				// The last frame's lines were complete but the blank line
				// never came: deliver it, the next call reports io.EOF.
				return Frame{Event: r.event, Data: r.data}, nil
			}
			if err == io.EOF && (partial || len(line) > 0) {
				return Frame{}, io.ErrUnexpectedEOF
			}
			return Frame{}, err
		}
		if len(line) == 0 { // dispatch
			if r.hasData || len(r.event) > 0 {
				return Frame{Event: r.event, Data: r.data}, nil
			}
			partial = false
			continue
		}
		partial = true
		if line[0] == ':' { // comment / keep-alive
			continue
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) {
		case "data":
			if r.hasData {
				r.data = append(r.data, '\n')
			}
			r.data = append(r.data, value...)
			r.hasData = true
			if len(r.data) > r.max {
				return Frame{}, ErrFrameTooLarge
			}
		case "event":
			r.event = append(r.event[:0], value...)
		}
	}
}

// readLine returns one line without its terminator (\n, \r\n). The returned
// slice is valid until the next read.
func (r *Reader) readLine() ([]byte, error) {
	line, err := r.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		buf := append([]byte(nil), line...)
		for err == bufio.ErrBufferFull {
			if len(buf) > r.max {
				return nil, ErrFrameTooLarge
			}
			line, err = r.br.ReadSlice('\n')
			buf = append(buf, line...)
		}
		line = buf
	}
	if err != nil {
		if err == io.EOF && len(line) > 0 {
			return bytes.TrimRight(line, "\r"), io.EOF
		}
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

// AppendData appends a "data: <payload>\n\n" frame to dst. payload must not
// contain newlines (JSON from encoding/json never does).
func AppendData(dst, payload []byte) []byte {
	dst = append(dst, "data: "...)
	dst = append(dst, payload...)
	return append(dst, '\n', '\n')
}

// Done is the OpenAI end-of-stream frame.
var Done = []byte("data: [DONE]\n\n")
