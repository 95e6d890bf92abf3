package sse

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

// frameOf is a frame as comparable text.
type frameOf struct{ event, data string }

// readAll reads every frame from r (bounded: a frame needs at least one
// line, so there can be no more frames than input bytes).
func readAll(t *testing.T, r io.Reader, max, inputLen int) ([]frameOf, error) {
	rd := NewReader(r, max)
	var out []frameOf
	for i := 0; ; i++ {
		if i > inputLen+1 {
			t.Fatalf("more than %d frames from %d bytes: the reader loops", i, inputLen)
		}
		f, err := rd.Next()
		if err != nil {
			return out, err
		}
		if len(f.Data) > max {
			t.Fatalf("frame %d has %d bytes of data, limit %d", i, len(f.Data), max)
		}
		out = append(out, frameOf{string(f.Event), string(f.Data)})
	}
}

// reference is a plain, allocation-happy reading of the same rules as
// Reader (no size limit): lines end in \n with one \r before it dropped;
// a blank line dispatches the pending frame; ":" lines are comments;
// "data" lines are joined with \n; "event" sets the type; the first space
// after the colon is dropped. At the end of input: an unterminated line
// (only \r's aside) or a pending frame with no data means the stream was
// cut (io.ErrUnexpectedEOF); complete data lines without the blank line
// are delivered.
func reference(in []byte) ([]frameOf, error) {
	var out []frameOf
	var event, data []byte
	hasData, partial := false, false
	rest := in
	for {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			line := bytes.TrimRight(rest, "\r")
			switch {
			case len(line) == 0 && hasData:
				return append(out, frameOf{string(event), string(data)}), io.EOF
			case partial || len(line) > 0:
				return out, io.ErrUnexpectedEOF
			}
			return out, io.EOF
		}
		line := rest[:i]
		rest = rest[i+1:]
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
		if len(line) == 0 {
			if hasData || len(event) > 0 {
				out = append(out, frameOf{string(event), string(data)})
				event, data, hasData = nil, nil, false
			}
			partial = false
			continue
		}
		partial = true
		if line[0] == ':' {
			continue
		}
		field, value := line, []byte(nil)
		if j := bytes.IndexByte(line, ':'); j >= 0 {
			field, value = line[:j], line[j+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) {
		case "data":
			if hasData {
				data = append(data, '\n')
			}
			data = append(data, value...)
			hasData = true
		case "event":
			event = append(event[:0], value...)
		}
	}
}

func sameFrames(a, b []frameOf) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// FuzzReader: for any input the reader never panics or loops, agrees with
// the reference reading frame for frame and on how the stream ended
// (clean end vs cut), gives the same frames however the bytes are split
// into reads (a slow or sliced network), and with a small size limit
// returns a prefix of the same frames before ErrFrameTooLarge.
func FuzzReader(f *testing.F) {
	for _, s := range []string{
		"data: a\n\ndata: b\n\n",
		"data: a\r\n\r\n",
		"event: message_start\ndata: x\ndata: y\n\n",
		": ping\n\n:\n\ndata: a\n\n",
		"data:a\n\n",
		"data: a\n\ndata: [DONE]\n",
		"data: a\n\ndata: {\"cho",
		"event: only\n\n",
		"data\n\ndata:\n\n",
		"data: a\n\r",
		"id: 1\nretry: 10\ndata:  two spaces\n\n",
		"data: {\"id\":\"chatcmpl-1\",\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > 1<<16 {
			return
		}
		const unlimited = 1 << 30
		want, wantErr := reference(in)
		got, err := readAll(t, bytes.NewReader(in), unlimited, len(in))
		if err != wantErr || !sameFrames(got, want) {
			t.Fatalf("input %q:\nreader    %q, %v\nreference %q, %v", in, got, err, want, wantErr)
		}
		split, err := readAll(t, iotest.OneByteReader(bytes.NewReader(in)), unlimited, len(in))
		if err != wantErr || !sameFrames(split, want) {
			t.Fatalf("input %q read a byte at a time: %q, %v; whole: %q, %v", in, split, err, want, wantErr)
		}
		split, err = readAll(t, iotest.DataErrReader(iotest.HalfReader(bytes.NewReader(in))), unlimited, len(in))
		if err != wantErr || !sameFrames(split, want) {
			t.Fatalf("input %q read in halves: %q, %v; whole: %q, %v", in, split, err, want, wantErr)
		}
		const small = 16
		limited, err := readAll(t, bytes.NewReader(in), small, len(in))
		if !errors.Is(err, ErrFrameTooLarge) && err != wantErr {
			t.Fatalf("input %q with limit %d: error %v, want %v or ErrFrameTooLarge", in, small, err, wantErr)
		}
		if len(limited) > len(want) || !sameFrames(limited, want[:len(limited)]) {
			t.Fatalf("input %q with limit %d: frames %q are not a prefix of %q", in, small, limited, want)
		}
		if err == wantErr && len(limited) != len(want) {
			t.Fatalf("input %q with limit %d: %d frames and a normal end, want %d", in, small, len(limited), len(want))
		}
	})
}

// FuzzAppendDataRoundTrip: a frame written with AppendData reads back as
// the same payload, whatever it holds (no line breaks, as documented).
func FuzzAppendDataRoundTrip(f *testing.F) {
	for _, s := range []string{"", "[DONE]", " leading space", ":colon", `{"a":"b"}`, "data: nested", "\x00\xff"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		if bytes.ContainsAny(payload, "\r\n") {
			return
		}
		wire := AppendData(nil, payload)
		wire = append(wire, Done...)
		r := NewReader(bytes.NewReader(wire), 0)
		fr, err := r.Next()
		if err != nil || string(fr.Data) != string(payload) || len(fr.Event) != 0 {
			t.Fatalf("payload %q read back as %q (event %q), %v", payload, fr.Data, fr.Event, err)
		}
		fr, err = r.Next()
		if err != nil || string(fr.Data) != "[DONE]" {
			t.Fatalf("payload %q: then %q, %v", payload, fr.Data, err)
		}
		if _, err := r.Next(); err != io.EOF {
			t.Fatalf("payload %q: end %v", payload, err)
		}
	})
}
