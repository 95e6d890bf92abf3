package bedrock_test

import (
	"context"
	"io"
	"strings"
	"testing"
)

// TestMalformedEventIsSkippedAndCounted: an event whose JSON payload is
// not valid JSON, mid-stream, is dropped before the SDK's reader (which
// would end the whole stream on it) and counted on the request's trace;
// the stream completes with the rest (issue 13, item 7).
func TestMalformedEventIsSkippedAndCounted(t *testing.T) {
	events := textEvents("Hello")
	events = append(events[:2:2], ev("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"GARB`), events[1])
	events = append(events, ev("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":" world"}}`))
	events = append(events, ev("metadata", `not json`))
	f := newFake(t, reply{events: concat(events, stopEvents("end_turn", 9, 2))})
	call := newCall(t, streamHi)
	s, err := newAdapter(t, f).Send(context.Background(), call)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := drain(t, s)
	if err != io.EOF {
		t.Fatalf("stream ended with %v after %q: a malformed event must not cut it", err, lines)
	}
	all := strings.Join(lines, "\n")
	if strings.Contains(all, "GARB") || strings.Count(all, `"content":"Hello"`) != 2 || !strings.Contains(all, `"content":" world"`) {
		t.Errorf("chunks:\n%s", all)
	}
	if n := call.Req.Trace.MalformedFrames; n != 2 {
		t.Errorf("trace counts %d malformed frames, want 2", n)
	}
	if u := s.Usage(); u.Output != 2 || u.Estimated {
		t.Errorf("usage %+v", u)
	}
}
