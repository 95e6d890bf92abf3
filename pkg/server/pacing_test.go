package server_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/pacing"
	"github.com/llmgw/llmgw/pkg/server"
)

// withPacing turns the pacing stage on.
func withPacing(o *server.Options) { o.Pacing = pacing.Pacer{} }

// anthropicText streams texts as Anthropic text deltas, all at once, then
// waits hold before it finishes.
func anthropicText(w http.ResponseWriter, texts []string, hold time.Duration) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	ev := func(typ, data string) { fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, data) }
	ev("message_start", `{"type":"message_start","message":{"id":"msg_01XFDUDYJgAACzvnptvVoYEL","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5-20250929","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"output_tokens":1}}}`)
	ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
	for _, t := range texts {
		b, _ := json.Marshal(t)
		ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`+string(b)+`}}`)
	}
	w.(http.Flusher).Flush()
	time.Sleep(hold)
	ev("content_block_stop", `{"type":"content_block_stop","index":0}`)
	ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":200}}`)
	ev("message_stop", `{"type":"message_stop"}`)
}

// frame is one SSE data frame as the client got it.
type frame struct {
	data    string
	content string
	at      time.Duration
}

// readFrames reads a chat stream, timing each data frame from the request.
func readFrames(t *testing.T, resp *http.Response, start time.Time) []frame {
	t.Helper()
	var out []frame
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "data: ") {
			continue
		}
		f := frame{data: line[6:], at: time.Since(start)}
		var c struct {
			Choices []struct {
				Delta struct{ Content string } `json:"delta"`
			} `json:"choices"`
		}
		if json.Unmarshal([]byte(f.data), &c) == nil && len(c.Choices) > 0 {
			f.content = c.Choices[0].Delta.Content
		}
		out = append(out, f)
	}
	return out
}

func contentOf(fs []frame) (s string, frames int, first, last time.Duration) {
	var b strings.Builder
	for _, f := range fs {
		if f.content == "" {
			continue
		}
		if frames == 0 {
			first = f.at
		}
		frames++
		last = f.at
		b.WriteString(f.content)
	}
	return b.String(), frames, first, last
}

func anthropicRoute(url, extra string) string {
	return fastPolicy + `
providers:
  claude: {kind: anthropic, base_url: "` + url + `"}
routes:
  m:
` + extra + `    targets: [{provider: claude, model: claude-sonnet-4-5}]
`
}

// A burst of 800 characters while the upstream is still generating is
// released at the profile's rate (fast: 400 char/s after a 200 character
// burst), split into many frames, with nothing lost; on a translated
// upstream and on a passthrough one alike.
func TestPacingReleasesABurstAtTheProfileRate(t *testing.T) {
	burst := strings.Repeat("paced ", 133) + "ab" // 800 characters
	claude := newUpstream(t, func(w http.ResponseWriter, _ *http.Request, _ []byte, _ int) {
		anthropicText(w, []string{burst}, 2500*time.Millisecond)
	})
	words := make([]string, 40) // 40 frames of 20 characters
	for i := range words {
		words[i] = burst[i*20 : i*20+20]
	}
	openai := newUpstream(t, func(w http.ResponseWriter, _ *http.Request, _ []byte, _ int) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, roleChunk(true))
		for _, s := range words {
			io.WriteString(w, contentChunk(s, true))
		}
		w.(http.Flusher).Flush()
		time.Sleep(2500 * time.Millisecond)
		io.WriteString(w, finishChunk("stop", true)+usageChunk(5, 200, 0)+"data: [DONE]\n\n")
	})
	for _, c := range []struct{ name, cfg string }{
		{"translated", anthropicRoute(claude.URL, "")},
		{"passthrough", oneRoute("", openai.URL)},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := newGateway(t, c.cfg, withPacing)
			start := time.Now()
			resp := g.post(t, streamBody, "x-gateway-pacing", "fast")
			text, frames, first, last := contentOf(readFrames(t, resp, start))
			if text != burst {
				t.Fatalf("text changed: %q", text)
			}
			rate := float64(len(burst)-200) / (last - first).Seconds()
			t.Logf("%d frames over %s: %.0f char/s after the burst (profile 400)", frames, last-first, rate)
			if r := rate / pacing.Fast.CharsPerSecond; r < 0.6 || r > 1.4 {
				t.Errorf("released at %.0f char/s", rate)
			}
			if rec := g.waitRecs(t, 1)[0]; rec.Pacing != "fast" || rec.Outcome != "ok" {
				t.Errorf("record %+v", rec)
			}
		})
	}
}

// A route's default profile applies when the request names none; the body
// field (metadata.pacing) overrides it; whatever the profile, the stream
// ends within pacing.EndBound of the upstream's end, complete.
func TestPacingRouteDefaultBodyFieldAndEndBound(t *testing.T) {
	text := strings.Repeat("slowly ", 300) // 2,100 characters: 35 s at 60 char/s
	claude := newUpstream(t, func(w http.ResponseWriter, _ *http.Request, _ []byte, _ int) {
		anthropicText(w, []string{text}, 0)
	})
	g := newGateway(t, anthropicRoute(claude.URL, "    pacing: slow\n"), withPacing)

	start := time.Now()
	got, frames, _, last := contentOf(readFrames(t, g.post(t, streamBody), start))
	t.Logf("route default slow: %d frames, last at %s", frames, last)
	if got != text || frames < 10 {
		t.Fatalf("text intact %v, %d frames: the route default did not pace", got == text, frames)
	}
	if r := float64(last) / float64(pacing.EndBound); r > 2 {
		t.Errorf("the end came %s after the upstream's (bound %s)", last, pacing.EndBound)
	}

	start = time.Now()
	body := `{"model":"m","stream":true,"metadata":{"pacing":"instant"},"messages":[{"role":"user","content":"hi"}]}`
	got, frames, _, last = contentOf(readFrames(t, g.post(t, body), start))
	t.Logf("metadata.pacing instant: %d frames, last at %s", frames, last)
	if got != text || frames != 1 {
		t.Fatalf("instant: %d frames", frames)
	}
	recs := g.waitRecs(t, 2)
	if recs[0].Pacing != "slow" || recs[1].Pacing != "instant" {
		t.Errorf("records: %q, %q", recs[0].Pacing, recs[1].Pacing)
	}
}

// An unknown profile is the caller's mistake: a 400 and no upstream call.
func TestUnknownPacingProfileIsRefused(t *testing.T) {
	up := newUpstream(t, okHandler)
	g := newGateway(t, oneRoute("", up.URL), withPacing)
	req, _ := http.NewRequest(http.MethodPost, g.URL+"/v1/chat/completions?pacing=warp", strings.NewReader(streamBody))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, resp.Body)
	if resp.StatusCode != 400 || !strings.Contains(body, "unknown_pacing_profile") || up.hits.Load() != 0 {
		t.Fatalf("%d %s (upstream hits %d)", resp.StatusCode, body, up.hits.Load())
	}
}

// Pacing applies to streams only: a non-streaming body is sent whole, at
// once, whatever the request selected.
func TestPacingLeavesNonStreamingBodiesAlone(t *testing.T) {
	text := strings.Repeat("whole ", 300)
	claude := newUpstream(t, func(w http.ResponseWriter, _ *http.Request, _ []byte, _ int) {
		w.Header().Set("Content-Type", "application/json")
		b, _ := json.Marshal(text)
		fmt.Fprintf(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":%s}],"stop_reason":"end_turn","usage":{"input_tokens":5,"output_tokens":300}}`, b)
	})
	g := newGateway(t, anthropicRoute(claude.URL, "    pacing: slow\n"), withPacing)
	start := time.Now()
	resp := g.post(t, chatBody, "x-gateway-pacing", "slow")
	body := readAll(t, resp.Body)
	if took := time.Since(start); resp.StatusCode != 200 || !strings.Contains(body, text) || took > 500*time.Millisecond {
		t.Fatalf("%d in %s: %.200s", resp.StatusCode, took, body)
	}
	if rec := g.waitRecs(t, 1)[0]; rec.Pacing != "" {
		t.Errorf("record pacing %q for a body", rec.Pacing)
	}
}
