package sse

import (
	"errors"
	"io"
	"strings"
	"testing"
)

func collect(t *testing.T, in string) ([]string, error) {
	t.Helper()
	r := NewReader(strings.NewReader(in), 64)
	var out []string
	for {
		f, err := r.Next()
		if err != nil {
			return out, err
		}
		out = append(out, string(f.Event)+"|"+string(f.Data))
	}
}

func TestReader(t *testing.T) {
	cases := []struct {
		name, in string
		want     []string
		err      error
	}{
		{"lf", "data: a\n\ndata: b\n\n", []string{"|a", "|b"}, io.EOF},
		{"crlf", "data: a\r\n\r\n", []string{"|a"}, io.EOF},
		{"event and multi-line data", "event: message_start\ndata: x\ndata: y\n\n", []string{"message_start|x\ny"}, io.EOF},
		{"comments and keep-alives skipped", ": ping\n\n:\n\ndata: a\n\n", []string{"|a"}, io.EOF},
		{"no space after colon", "data:a\n\n", []string{"|a"}, io.EOF},
		{"last frame without blank line", "data: a\n\ndata: [DONE]\n", []string{"|a", "|[DONE]"}, io.EOF},
		{"cut mid-line", "data: a\n\ndata: {\"cho", []string{"|a"}, io.ErrUnexpectedEOF},
		{"frame too large", "data: " + strings.Repeat("x", 100) + "\n\n", nil, ErrFrameTooLarge},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := collect(t, tc.in)
			if !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("frames = %q, want %q", got, tc.want)
			}
		})
	}
}

func BenchmarkReaderNext(b *testing.B) {
	frame := "data: " + `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt","choices":[{"index":0,"delta":{"content":" world"},"finish_reason":null}]}` + "\n\n"
	src := strings.Repeat(frame, 1000)
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	r := NewReader(strings.NewReader(src), 0)
	for b.Loop() {
		if _, err := r.Next(); err != nil {
			r = NewReader(strings.NewReader(src), 0)
		}
	}
}

func TestParseFrame(t *testing.T) {
	for in, want := range map[string][2]string{
		"event: message_start\ndata: {\"a\":1}\n\n": {"message_start", `{"a":1}`},
		"data: {}\n\n":                     {"", "{}"},
		"event: x\r\ndata: a\ndata: b\n\n": {"x", "a\nb"},
		": comment\ndata:tight\n\n":        {"", "tight"},
	} {
		f := ParseFrame([]byte(in))
		if string(f.Event) != want[0] || string(f.Data) != want[1] {
			t.Errorf("%q: got %q %q", in, f.Event, f.Data)
		}
	}
}
