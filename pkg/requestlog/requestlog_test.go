package requestlog_test

import (
	"bytes"
	"log/slog"
	"math"
	"net"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/requestlog"
)

// slogLine is what slog.JSONHandler writes for the request line of rec.
func slogLine(t testing.TB, now time.Time, rec *exchange.Record, clientIP string) []byte {
	var buf bytes.Buffer
	// Through Write with a plain slog handler (the slow path), with the
	// time fixed by a ReplaceAttr that only rewrites the time.
	h := slog.NewJSONHandler(&buf, &slog.HandlerOptions{ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey && len(groups) == 0 {
			return slog.Time(slog.TimeKey, now)
		}
		return a
	}})
	r := httptest.NewRequest("POST", "/v1/chat/completions", nil)
	r.RemoteAddr = net.JoinHostPort(clientIP, "1234")
	requestlog.Write(slog.New(h), r, rec)
	return buf.Bytes()
}

func records() []*exchange.Record {
	weird := "a\"b\\c\n\r\t\b\f\x00\x1f<>&\u2028\u2029é\xff\xfe😀"
	return []*exchange.Record{
		{},
		{RequestID: "req_1", API: "openai", Route: "bench", Team: "anonymous", Stream: true, Status: 200, Outcome: "ok",
			Provider: "mock", Target: "mock/bench-model", Attempts: []exchange.Attempt{{Target: "mock/bench-model", LatencyM: 0.412}},
			TTFTMillis: 0.3, LatencyMillis: 1.25, InputTokens: 10, OutputTokens: 20, CachedTokens: 3, Estimated: true, CostUSD: 1.5e-7},
		{RequestID: weird, API: exchange.API(weird), Route: weird, Team: weird, Tag: weird, Status: 502, Outcome: weird,
			Provider: weird, Target: weird, Attempts: []exchange.Attempt{
				{Target: weird, Key: weird, Status: 503, Category: gwerr.Category(weird), Phase: weird, Skipped: weird, LatencyM: 1e21,
					Continues: true, Stage: weird, InputTokens: 7, OutputTokens: -2, Decision: weird, Reason: weird, TextUnits: 3,
					CostUSD: 4.25e-4, Calls: 9},
				{Target: "bedrock-guardrail/abc:1", Stage: "moderation_output", Decision: "block", Reason: "content:HATE", TextUnits: 1, CostUSD: 0.00015, LatencyM: 3},
				{Target: "b", LatencyM: -0.0000001},
				{},
			}, FallbackDepth: 2, TTFTMillis: 123456789.125, LatencyMillis: 1e-9, CostUSD: 12345678901234567890123.0, MalformedFrames: 4,
			TraceID: weird, Variant: weird, ClientDropped: true, ResponseCache: weird, SavedCostUSD: 3.25e-5, Pacing: weird,
			ContinuedBy: []string{weird, "b/m"}},
		{RequestID: "x", Attempts: []exchange.Attempt{}, ContinuedBy: []string{}, LatencyMillis: math.SmallestNonzeroFloat64, CostUSD: math.MaxFloat64},
	}
}

func TestFastPathIsByteForByteSlog(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 45, 1, 123456789, time.FixedZone("X", 3600))
	for i, rec := range records() {
		want := slogLine(t, now, rec, "10.1.2.3")
		level := slog.LevelInfo
		if rec.Status >= 500 {
			level = slog.LevelWarn
		}
		got := requestlog.AppendRequestLine(nil, now, level, "10.1.2.3", rec)
		if !bytes.Equal(got, want) {
			t.Fatalf("record %d:\n got %s\nwant %s", i, got, want)
		}
	}
}

func TestJSONHandlerUsesTheFastPathAndPassesTheRest(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(requestlog.NewJSONHandler(&buf, nil))
	log.Info("hello", slog.Int("n", 1))
	r := httptest.NewRequest("POST", "/v1/chat/completions", nil)
	requestlog.Write(log, r, records()[1])
	lines := bytes.Split(bytes.TrimSuffix(buf.Bytes(), []byte("\n")), []byte("\n"))
	if len(lines) != 2 || !bytes.Contains(lines[0], []byte(`"msg":"hello","n":1}`)) ||
		!bytes.Contains(lines[1], []byte(`"level":"INFO","msg":"request","request_id":"req_1"`)) {
		t.Fatalf("lines:\n%s", buf.Bytes())
	}
	// Disabled level: no line.
	buf.Reset()
	quiet := slog.New(requestlog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelError}))
	requestlog.Write(quiet, r, records()[1])
	if buf.Len() != 0 {
		t.Fatalf("a request line below the handler's level was written: %s", buf.Bytes())
	}
}

func FuzzFastPathIsByteForByteSlog(f *testing.F) {
	f.Add("req", "route", "team/x", 1.5, 200)
	f.Add("\xff\u2028\b", "<&>", "\x00", 1e-7, 503)
	now := time.Date(2026, 12, 1, 10, 45, 1, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s1, s2, s3 string, fl float64, status int) {
		rec := &exchange.Record{RequestID: s1, Route: s2, Team: s3, Tag: s1 + s2, Status: status, LatencyMillis: fl,
			Attempts: []exchange.Attempt{{Target: s2, Key: s3, Category: gwerr.Category(s1), LatencyM: fl, Stage: s3}},
			TraceID:  s3, Variant: s1, ResponseCache: s2, Pacing: s3, SavedCostUSD: fl, ContinuedBy: []string{s1, s2}}
		if math.IsInf(fl, 0) || math.IsNaN(fl) {
			return
		}
		level := slog.LevelInfo
		if status >= 500 {
			level = slog.LevelWarn
		}
		want := slogLine(t, now, rec, "::1")
		if got := requestlog.AppendRequestLine(nil, now, level, "::1", rec); !bytes.Equal(got, want) {
			t.Fatalf("\n got %s\nwant %s", got, want)
		}
	})
}

func BenchmarkRequestLine(b *testing.B) {
	rec := records()[1]
	r := httptest.NewRequest("POST", "/v1/chat/completions", nil)
	for _, c := range []struct {
		name string
		log  *slog.Logger
	}{
		{"slog", slog.New(slog.NewJSONHandler(discard{}, nil))},
		{"fast", slog.New(requestlog.NewJSONHandler(discard{}, nil))},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				requestlog.Write(c.log, r, rec)
			}
		})
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
