package anthropic

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
)

// TestMalformedEventIsSkippedAndCounted: a frame whose data is not JSON,
// mid-stream, is skipped (never translated into garbage, never an
// interruption) and counted on the request's trace; the stream completes
// with the same events as without it (issue 13, item 7).
func TestMalformedEventIsSkippedAndCounted(t *testing.T) {
	clean := readFixture(t, "text.sse")
	garbled := []string{
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"GARB\n\n",
		"event: ping\ndata: {\"type\": \"pi\n\n",
		"data: not json at all\n\n",
	}
	// After the first content_block_delta.
	at := bytes.Index(clean, []byte("event: content_block_delta"))
	at += bytes.Index(clean[at:], []byte("\n\n")) + 2
	body := append(append([]byte(nil), clean[:at]...), []byte(garbled[0]+garbled[1]+garbled[2])...)
	body = append(body, clean[at:]...)

	up := newFakeAnthropic(t, sseReply(body))
	a := newAdapter(t, config.Provider{Kind: "anthropic", BaseURL: up.URL})
	call := newCall(t, `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`, exchange.Key{})
	s, err := a.Send(context.Background(), call)
	if err != nil {
		t.Fatal(err)
	}
	got, err := collect(t, s)
	s.Close()
	if err != io.EOF {
		t.Fatalf("end %v: a malformed frame must not interrupt a stream that completes", err)
	}
	want, err := collect(t, newSSEStream("anth", io.NopCloser(bytes.NewReader(clean)), 0, testCreated))
	if err != io.EOF {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d events, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i].Kind != want[i].Kind || got[i].Text != want[i].Text || got[i].Finish != want[i].Finish {
			t.Errorf("event %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if n := call.Req.Trace.MalformedFrames; n != 3 {
		t.Errorf("trace counts %d malformed frames, want 3", n)
	}
	// An error event stays an error even when its body is garbled.
	s = newSSEStream("anth", io.NopCloser(bytes.NewReader(append(clean[:at:at], "event: error\ndata: {oops\n\n"...))), 0, testCreated)
	if _, err := collect(t, s); err == nil || err == io.EOF {
		t.Errorf("garbled error event ended the stream with %v", err)
	}
}
