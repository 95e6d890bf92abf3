package teams_test

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// TestConcurrentRequestsPerTeamAreCapped: a team with
// limits.max_concurrent_requests 2 holding two open streams is refused a
// third with 429 in the API's shape and no upstream call; another team is
// not affected; once a stream ends the team may send again.
func TestConcurrentRequestsPerTeamAreCapped(t *testing.T) {
	arrived := make(chan struct{}, 8)
	release := make(chan struct{})
	g := newGW(t, gwOptions{open: openEmbedded, limits: "limits: {max_concurrent_requests: 2}",
		upstream: func(w http.ResponseWriter, _ *http.Request, body []byte) {
			if strings.Contains(string(body), "hold") {
				arrived <- struct{}{}
				<-release
			}
			reply(w, body, []string{"Hello"})
		}})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free) // runs before the servers close, even when the test fails
	hold := `{"model":"m","stream":true,"messages":[{"role":"user","content":"hold"}]}`
	var wg sync.WaitGroup
	codes := make(chan int, 2)
	for range 2 {
		wg.Go(func() {
			resp, _ := g.call(t, g.keys["search"], hold, "Accept", "text/event-stream")
			codes <- resp.StatusCode
		})
	}
	<-arrived
	<-arrived
	// (g.call waits for every handler, the held ones too: post directly.)
	post := func(key, body string) (*http.Response, string) {
		req, _ := http.NewRequest(http.MethodPost, g.URL+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	resp, body := post(g.keys["search"], chatBody)
	if resp.StatusCode != 429 || !strings.Contains(body, `"code":"concurrency_limit_exceeded"`) || !strings.Contains(body, `"error":{`) {
		t.Fatalf("third request in flight: %d %s", resp.StatusCode, body)
	}
	if resp, body := post(g.keys["ads"], `{"model":"other","messages":[{"role":"user","content":"hi"}]}`); resp.StatusCode != 200 {
		t.Fatalf("another team: %d %s", resp.StatusCode, body)
	}
	if n := g.up.hits.Load(); n != 3 {
		t.Errorf("%d upstream calls, want 3 (two held, one of the other team)", n)
	}
	free()
	wg.Wait()
	g.inflight.Wait() // both settled
	for range 2 {
		if c := <-codes; c != 200 {
			t.Errorf("held stream: %d", c)
		}
	}
	if resp, body := g.call(t, g.keys["search"], chatBody); resp.StatusCode != 200 {
		t.Fatalf("after the streams ended: %d %s", resp.StatusCode, body)
	}
}
