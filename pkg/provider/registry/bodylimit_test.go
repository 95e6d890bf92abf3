package registry_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/server"
)

// oversize is how much an oversize upstream offers: more than the bound
// under test (1 MiB) plus any socket buffering, and more than the 64 MiB
// each adapter used to read before it gave up on the JSON.
const oversize = 96 << 20

// maxSent is the most a bounded gateway lets the upstream send: the 1 MiB
// bound plus what the loopback sockets buffer.
const maxSent = 16 << 20

// oversizeUpstream answers every request with 200 and a JSON body that
// never closes (an endless string) of oversize bytes, or, when frames is
// set, an AWS event stream whose first frame declares 256 MiB. It counts
// what the client took; done is closed when the handler has returned
// (the client stopped reading and dropped the connection, or took it all).
func oversizeUpstream(t *testing.T, frames bool) (url string, sent *atomic.Int64, done chan struct{}) {
	sent, done = new(atomic.Int64), make(chan struct{})
	var once atomic.Bool
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if !once.CompareAndSwap(false, true) {
			http.Error(w, "one request only", http.StatusTeapot)
			return
		}
		defer close(done)
		chunk := []byte(strings.Repeat("a", 64<<10))
		if frames {
			w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
			var prelude [12]byte
			binary.BigEndian.PutUint32(prelude[0:], 256<<20)
			binary.BigEndian.PutUint32(prelude[4:], 0)
			binary.BigEndian.PutUint32(prelude[8:], crc32.ChecksumIEEE(prelude[:8])) // a valid prelude
			n, _ := w.Write(prelude[:])
			sent.Add(int64(n))
		} else {
			w.Header().Set("Content-Type", "application/json")
			n, _ := io.WriteString(w, `{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"`)
			sent.Add(int64(n))
		}
		for sent.Load() < oversize {
			n, err := w.Write(chunk)
			sent.Add(int64(n))
			if err != nil {
				return
			}
		}
	}))
	t.Cleanup(up.Close)
	return up.URL, sent, done
}

// A whole upstream answer longer than server.max_upstream_body_bytes is a
// provider error of its own code, before any byte reaches the client: the
// gateway stops reading the upstream near the bound (never holding the
// rest) and fails over to the next target, for every HTTP kind and for
// Bedrock; alone on its route, the client gets 502 naming the bound. A
// Bedrock event stream whose frame declares more than the per-frame bound
// is refused the same way before the frame is read.
func TestAnOversizeUpstreamBodyFailsOverAndIsNotRead(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("BIG_KEY", "sk-test")
	for _, tc := range []struct {
		kind, provider, model string
		stream, frames        bool
	}{
		{kind: "openai", provider: "{kind: openai, base_url: %q, keys: [{env: BIG_KEY}]}", model: "gpt-4o"},
		{kind: "anthropic", provider: "{kind: anthropic, base_url: %q, keys: [{env: BIG_KEY}]}", model: "claude-sonnet-4-5"},
		{kind: "gemini", provider: "{kind: gemini, base_url: %q, keys: [{env: BIG_KEY}]}", model: "gemini-2.5-flash"},
		{kind: "bedrock", provider: "{kind: bedrock, region: us-east-1, endpoint: %q}", model: "us.anthropic.claude-sonnet-4-5-20250929-v1:0"},
		{kind: "bedrock stream", provider: "{kind: bedrock, region: us-east-1, endpoint: %q}", model: "us.anthropic.claude-sonnet-4-5-20250929-v1:0", stream: true, frames: true},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			for _, solo := range []bool{false, true} {
				url, sent, done := oversizeUpstream(t, tc.frames)
				second := "\n      - {provider: spare, model: x}"
				if solo {
					second = ""
				}
				cfg, err := config.Parse([]byte(fmt.Sprintf(`
server: {max_upstream_body_bytes: 1048576}
defaults: {attempts: 1}
providers:
  big: `+tc.provider+`
  spare: {kind: fake}
routes:
  m:
    targets:
      - {provider: big, model: %q}`+second+"\n", url, tc.model)))
				if err != nil {
					t.Fatal(err)
				}
				h, err := server.New(context.Background(), cfg, server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
				if err != nil {
					t.Fatal(err)
				}
				gw := httptest.NewServer(h)
				resp, err := http.Post(gw.URL+"/v1/chat/completions", "application/json",
					strings.NewReader(fmt.Sprintf(`{"model":"m","stream":%v,"messages":[{"role":"user","content":"hi"}]}`, tc.stream)))
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				gw.Close()
				<-done // the gateway let go of the upstream
				if n := sent.Load(); n > maxSent {
					t.Errorf("solo %v: the upstream sent %d bytes before the gateway let go: want at most the bound plus socket buffers (%d)", solo, n, maxSent)
				}
				switch {
				case solo && (resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(body), "larger than the gateway's limit")):
					t.Errorf("solo: status %d body %s: want 502 naming the gateway's limit", resp.StatusCode, body)
				case !solo && (resp.StatusCode != http.StatusOK || resp.Header.Get("x-gateway-provider") != "spare"):
					t.Errorf("chained: status %d provider %q body %.300s: want 200 from the spare target", resp.StatusCode, resp.Header.Get("x-gateway-provider"), body)
				}
			}
		})
	}
}
