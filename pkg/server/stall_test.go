package server_test

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// Item 9 (issue 13), fault injection: the upstream sends its role chunk,
// the first content frame and part of the next inside ONE HTTP chunk whose
// declared size covers both frames, then stalls. The client gets the first
// frame at once - while the upstream is still stalled, not when a timeout
// ends the call - and then the idle timeout (not the first-token timeout)
// ends the stream with a typed error.
func TestStallInsideAnHTTPChunkRelaysWhatArrived(t *testing.T) {
	gone := make(chan struct{}) // closed when the gateway ended the upstream call
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ []byte, _ int) {
		c, bw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close()
		next := contentChunk(" world", true)
		frames := roleChunk(true) + contentChunk("Hello", true)
		sent := frames + next[:len(next)/2]
		fmt.Fprintf(bw, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s",
			len(frames)+len(next), sent)
		bw.Flush()
		io.Copy(io.Discard, c) // stalls until the gateway closes the connection
		close(gone)
	})
	g := newGateway(t, oneRoute("    first_token_timeout: 10s\n    idle_timeout: 1s\n", up.URL))
	resp := g.post(t, streamBody)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, readAll(t, resp.Body))
	}
	br := bufio.NewReader(resp.Body)
	var frames []string
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			break
		}
		if !strings.HasPrefix(line, "data: ") {
			continue
		}
		frames = append(frames, line)
		if strings.Contains(line, `"content":"Hello"`) {
			select {
			case <-gone:
				t.Fatal("the first content frame reached the client only after the upstream call ended")
			default:
			}
		}
	}
	if len(frames) != 3 || !strings.Contains(frames[1], `"content":"Hello"`) {
		t.Fatalf("frames %q: want the role chunk, Hello, then one error", frames)
	}
	last := frames[2]
	if !strings.Contains(last, `"category":"timeout"`) || !strings.Contains(last, "sent nothing for 1s") || strings.Contains(last, "world") {
		t.Errorf("last frame %s: want the idle timeout's typed error", last)
	}
	<-gone
	if rec := g.waitRecs(t, 1)[0]; rec.Outcome != "timeout" || rec.TTFTMillis <= 0 {
		t.Errorf("record %+v", rec)
	}
}
