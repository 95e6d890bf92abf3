package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdaurl"
)

// endlessUpstream streams 1 KiB content chunks as fast as the gateway reads
// them, until its request is cancelled. written counts the bytes its writes
// got rid of; cancelled is closed when the gateway cancelled the call.
type endlessUpstream struct {
	*upstream
	written   atomic.Int64
	cancelled chan struct{}
}

func newEndlessUpstream(t *testing.T) *endlessUpstream {
	e := &endlessUpstream{cancelled: make(chan struct{})}
	word := strings.Repeat("x", 1024)
	e.upstream = newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ []byte, _ int) {
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		io.WriteString(w, roleChunk(true))
		frame := contentChunk(word, true)
		for r.Context().Err() == nil {
			if _, err := io.WriteString(w, frame); err != nil {
				break
			}
			fl.Flush()
			e.written.Add(int64(len(frame)))
		}
		close(e.cancelled)
	})
	return e
}

// smallBufferClient is an HTTP client whose sockets have a small receive
// buffer, so that a slow reader pushes back within a few kilobytes.
func smallBufferClient() *http.Client {
	d := &net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) {
			syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		})
	}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext, DisableCompression: true}}
}

func postWith(t *testing.T, c *http.Client, url, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("post: %v", err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// heapInuse is the live heap after a collection.
func heapInuse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// A client reading a few bytes a second from an endless, fast upstream: the
// gateway stops reading the upstream (its writes stall once the sockets'
// buffers are full) and its heap stays flat, instead of buffering what the
// client cannot take.
func TestSlowReaderKeepsGatewayMemoryFlat(t *testing.T) {
	up := newEndlessUpstream(t)
	g := newGateway(t, "server: {client_idle_timeout: 20s}\n"+oneRoute("    idle_timeout: 20s\n", up.URL))
	resp := postWith(t, smallBufferClient(), g.URL, streamBody)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	base := heapInuse()
	var samples []uint64
	var upAt []int64
	buf := make([]byte, 32)
	read := 0
	for i := 0; i < 30; i++ { // 3 s at 32 bytes per 100 ms: about 320 bytes a second
		n, err := io.ReadFull(resp.Body, buf)
		read += n
		if err != nil {
			t.Fatalf("read after %d bytes: %v", read, err)
		}
		time.Sleep(100 * time.Millisecond)
		samples = append(samples, heapInuse())
		upAt = append(upAt, up.written.Load())
	}
	resp.Body.Close()
	<-up.cancelled
	rec := g.waitRecs(t, 1)[0]

	// The upstream was held back: after the buffers filled (well within
	// the first second) it could write nothing more.
	firstHalf, last := upAt[len(upAt)/2], upAt[len(upAt)-1]
	t.Logf("client read %d bytes; upstream wrote %d KiB at 1.5 s and %d KiB at 3 s", read, firstHalf>>10, last>>10)
	if last-firstHalf > 256<<10 {
		t.Errorf("the upstream kept writing while the client read nothing: %d KiB in the last 1.5 s", (last-firstHalf)>>10)
	}
	if last > 64<<20 {
		t.Errorf("upstream wrote %d MiB for a client that read %d bytes", last>>20, read)
	}
	peak := base
	for _, s := range samples {
		peak = max(peak, s)
	}
	t.Logf("heap in use: %d KiB before, peak %d KiB, last %d KiB", base>>10, peak>>10, samples[len(samples)-1]>>10)
	if peak > base+4<<20 {
		t.Errorf("heap grew by %d KiB while the client read slowly", (peak-base)>>10)
	}
	if rec.Outcome != "client_cancelled" || rec.OutputTokens == 0 {
		t.Errorf("record %+v", rec)
	}
}

// A client that stops reading altogether is dropped after
// client_idle_timeout: its upstream call is cancelled and its usage record
// written, with the tokens streamed so far.
func TestClientThatStopsReadingIsDroppedAndRecorded(t *testing.T) {
	up := newEndlessUpstream(t)
	g := newGateway(t, "server: {client_idle_timeout: 300ms}\n"+oneRoute("    idle_timeout: 20s\n", up.URL))
	resp := postWith(t, smallBufferClient(), g.URL, streamBody)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	io.ReadFull(resp.Body, make([]byte, 100)) // then never again
	select {
	case <-up.cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream of a client that stopped reading was never cancelled")
	}
	rec := g.waitRecs(t, 1)[0]
	if rec.Outcome != "client_cancelled" || !rec.ClientDropped || rec.Status != 200 || rec.OutputTokens == 0 {
		t.Fatalf("record %+v", rec)
	}
	if !strings.Contains(g.logs.String(), `"outcome":"client_cancelled"`) {
		t.Errorf("no log line for the dropped client")
	}
}

// On lambdaurl (no write deadlines: its writer is a pipe to the runtime)
// the fallback drops a client that stops reading the same way.
func TestStalledClientDroppedWithoutWriteDeadlines(t *testing.T) {
	up := newEndlessUpstream(t)
	g := newGateway(t, "server: {client_idle_timeout: 300ms}\n"+oneRoute("    idle_timeout: 20s\n", up.URL))
	invoke := lambdaurl.Wrap(g.h)
	ev := &events.LambdaFunctionURLRequest{RawPath: "/v1/chat/completions", Body: streamBody,
		Headers: map[string]string{"content-type": "application/json"}}
	ev.RequestContext.HTTP.Method = http.MethodPost
	ev.RequestContext.DomainName = "example.lambda-url.us-east-1.on.aws"
	resp, err := invoke(context.Background(), ev)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("invoke: %v %+v", err, resp)
	}
	io.ReadFull(resp.Body, make([]byte, 100)) // then stop, as a stalled stream would
	select {
	case <-up.cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("upstream never cancelled")
	}
	rec := g.waitRecs(t, 1)[0]
	if rec.Outcome != "client_cancelled" || !rec.ClientDropped || rec.OutputTokens == 0 {
		t.Fatalf("record %+v", rec)
	}
	io.Copy(io.Discard, resp.Body) // the abandoned write completes; the pipe closes
}

// A client that reads in bursts with pauses longer than the route's
// idle_timeout (but shorter than client_idle_timeout) gets the whole
// stream: the idle timer measures the upstream, not the time the gateway
// spends waiting for the client.
func TestSlowClientDoesNotTripTheUpstreamIdleTimer(t *testing.T) {
	word := strings.Repeat("y", 1024)
	const chunks = 10000 // 10 MiB: well beyond what the sockets hold (about 2 MiB here)
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ []byte, _ int) {
		words := make([]string, chunks)
		for i := range words {
			words[i] = word
		}
		streamReply(w, words, true)
	})
	// idle_timeout 600ms: a starved scheduler (race detector, the CDK
	// compile beside the suite) once paused the relay 300ms near the end.
	g := newGateway(t, "server: {client_idle_timeout: 10s}\n"+oneRoute("    idle_timeout: 600ms\n", up.URL))
	resp := postWith(t, smallBufferClient(), g.URL, `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`)
	var got strings.Builder
	head := make([]byte, 100)
	for i := 0; i < 3; i++ { // pauses of 1.5 s (2.5 idle timeouts), with the sockets' buffers full
		n, _ := io.ReadFull(resp.Body, head)
		got.Write(head[:n])
		time.Sleep(1500 * time.Millisecond)
	}
	rest, _ := io.ReadAll(resp.Body)
	got.Write(rest)
	body := got.String()
	if !strings.HasSuffix(body, "data: [DONE]\n\n") || strings.Contains(body, `"error"`) {
		t.Fatalf("stream did not complete: ...%s", body[max(0, len(body)-300):])
	}
	rec := g.waitRecs(t, 1)[0]
	if rec.Outcome != "ok" {
		t.Fatalf("record %+v", rec)
	}
	var n int
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "data: {") {
			var c struct {
				Choices []struct {
					Delta struct{ Content string } `json:"delta"`
				} `json:"choices"`
			}
			json.Unmarshal([]byte(line[6:]), &c)
			if len(c.Choices) > 0 && c.Choices[0].Delta.Content == word {
				n++
			}
		}
	}
	if n != chunks {
		t.Fatalf("%d of %d chunks", n, chunks)
	}
}

// A non-streaming body is written whole at the end, under the same bound:
// a client that reads none of a large body is dropped and recorded.
func TestNonStreamingBodyToAStalledClientIsDropped(t *testing.T) {
	big := strings.Repeat("b", 16<<20)
	up := newUpstream(t, func(w http.ResponseWriter, _ *http.Request, _ []byte, _ int) { completionReply(w, big) })
	g := newGateway(t, "server: {client_idle_timeout: 300ms}\n"+oneRoute("", up.URL))
	resp := postWith(t, smallBufferClient(), g.URL, chatBody)
	io.ReadFull(resp.Body, make([]byte, 100)) // then never again
	rec := g.waitRecs(t, 1)[0]
	if rec.Outcome != "client_cancelled" || !rec.ClientDropped || rec.Status != 200 {
		t.Fatalf("record %+v", rec)
	}
}
