package bedrock

import (
	"bytes"
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"testing/iotest"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
)

// frame encodes one event-stream frame with the SDK's encoder.
func frame(t testing.TB, msgType, typ, contentType, payload string) []byte {
	t.Helper()
	var m eventstream.Message
	m.Headers.Set(":message-type", eventstream.StringValue(msgType))
	m.Headers.Set(":event-type", eventstream.StringValue(typ))
	if contentType != "" {
		m.Headers.Set(":content-type", eventstream.StringValue(contentType))
	}
	m.Headers.Set(":flags", eventstream.Int32Value(7)) // a non-string header is skipped over
	m.Payload = []byte(payload)
	var b bytes.Buffer
	if err := eventstream.NewEncoder().Encode(&b, m); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func filtered(body []byte, oneByte bool) ([]byte, int64, error) {
	var n atomic.Int64
	var r io.Reader = bytes.NewReader(body)
	if oneByte {
		r = iotest.OneByteReader(r)
	}
	f := &frameFilter{body: io.NopCloser(r), n: &n, dec: eventstream.NewDecoder(), enc: eventstream.NewEncoder()}
	out, err := io.ReadAll(f)
	return out, n.Load(), err
}

// The filter passes well-formed frames on as the bytes they came in (in
// any read sizes), drops and counts events whose JSON payload is not JSON
// (not exceptions, not non-JSON content types), and reports a corrupt
// frame exactly as the SDK's decoder does, after the frames before it.
func TestFrameFilter(t *testing.T) {
	good1 := frame(t, "event", "messageStart", "application/json", `{"role":"assistant"}`)
	bad := frame(t, "event", "contentBlockDelta", "application/json", `{"delta":{"text":"GARB`)
	exc := frame(t, "exception", "throttlingException", "application/json", `not json`)
	bin := frame(t, "event", "audio", "application/octet-stream", "\x00\x01")
	good2 := frame(t, "event", "messageStop", "", `{"stopReason":"end_turn"}`)
	noCT := frame(t, "event", "metadata", "", `garbage`)
	in := bytes.Join([][]byte{good1, bad, exc, bin, good2, noCT}, nil)
	want := bytes.Join([][]byte{good1, exc, bin, good2}, nil)
	for _, oneByte := range []bool{false, true} {
		out, n, err := filtered(in, oneByte)
		if err != nil || !bytes.Equal(out, want) || n != 2 {
			t.Errorf("oneByte=%v: err %v, %d dropped (want 2), output equal to the kept frames: %v", oneByte, err, n, bytes.Equal(out, want))
		}
	}

	// A corrupt frame: the same error as the decoder's, after the frames before it.
	for name, corrupt := range map[string][]byte{
		"message crc": append(append([]byte(nil), good2[:len(good2)-1]...), good2[len(good2)-1]^0xff),
		"prelude crc": append(append([]byte(nil), good2[:8]...), append([]byte{good2[8] ^ 0xff}, good2[9:]...)...),
		"truncated":   good2[:len(good2)-3],
		"short":       good2[:5],
	} {
		_, wantErr := eventstream.NewDecoder().Decode(bytes.NewReader(corrupt), nil)
		if wantErr == nil {
			t.Fatalf("%s: the decoder accepts it", name)
		}
		out, _, err := filtered(append(append([]byte(nil), good1...), corrupt...), false)
		if !bytes.Equal(out, good1) || err == nil || err.Error() != wantErr.Error() || errors.Is(err, io.EOF) != errors.Is(wantErr, io.EOF) {
			t.Errorf("%s: output %d bytes (want %d), err %v, want %v", name, len(out), len(good1), err, wantErr)
		}
	}
}

// BenchmarkFrameFilter is the filter's cost per well-formed frame.
func BenchmarkFrameFilter(b *testing.B) {
	one := frame(b, "event", "contentBlockDelta", "application/json", `{"contentBlockIndex":0,"delta":{"text":" token"}}`)
	body := bytes.Repeat(one, 64)
	var n atomic.Int64
	buf := make([]byte, 32<<10)
	r := bytes.NewReader(body)
	f := &frameFilter{body: io.NopCloser(r), n: &n, dec: eventstream.NewDecoder(), enc: eventstream.NewEncoder()}
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		r.Reset(body)
		f.err, f.frame, f.off = nil, f.frame[:0], 0
		for {
			if _, err := f.Read(buf); err != nil {
				break
			}
		}
	}
}
