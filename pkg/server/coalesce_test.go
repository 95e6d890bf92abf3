package server_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// writeLog is a ResponseWriter that keeps each Write (flushes pass through
// by Unwrap).
type writeLog struct {
	http.ResponseWriter
	mu     sync.Mutex
	writes []string
}

func (l *writeLog) Write(b []byte) (int, error) {
	l.mu.Lock()
	l.writes = append(l.writes, string(b))
	l.mu.Unlock()
	return l.ResponseWriter.Write(b)
}

func (l *writeLog) Unwrap() http.ResponseWriter { return l.ResponseWriter }

// TestHeadFramesGoOutInOneWrite: the frames read before the commit (the
// role chunk and the first content) are already in memory, so they are
// written together; a frame that arrives later gets its own write, at
// once, without waiting for anything after it.
func TestHeadFramesGoOutInOneWrite(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, body []byte, _ int) {
		w.Header().Set("Content-Type", "text/event-stream")
		frame := `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"x","choices":[{"index":0,"delta":%s,"logprobs":null,"finish_reason":%s}]}` + "\n\n"
		fmt.Fprintf(w, frame, `{"role":"assistant","content":""}`, "null")
		fmt.Fprintf(w, frame, `{"content":"Hello"}`, "null")
		w.(http.Flusher).Flush()
		<-release
		fmt.Fprintf(w, frame, `{"content":" world"}`, "null")
		w.(http.Flusher).Flush()
		fmt.Fprintf(w, frame, `{}`, `"stop"`)
		io.WriteString(w, "data: [DONE]\n\n")
	})
	t.Cleanup(unblock) // before the upstream closes, even when the test fails early
	g := newGateway(t, oneRoute("", up.URL))
	var log *writeLog
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		log = &writeLog{ResponseWriter: w}
		mu.Unlock()
		g.h.ServeHTTP(log, r)
	}))
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 4096)
	got := ""
	for !strings.Contains(got, "Hello") {
		n, err := resp.Body.Read(buf)
		if err != nil {
			t.Fatalf("before the release: %v (read %q)", err, got)
		}
		got += string(buf[:n])
	}
	mu.Lock()
	first := log.writes[0]
	nw := len(log.writes)
	mu.Unlock()
	if nw != 1 || !strings.Contains(first, `"role":"assistant"`) || !strings.Contains(first, `"Hello"`) {
		t.Fatalf("head written in %d writes, first %q: want role and first content in one", nw, first)
	}
	unblock()
	rest, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(rest), " world") || !strings.HasSuffix(string(rest), "data: [DONE]\n\n") {
		t.Fatalf("rest of the stream: %q", rest)
	}
}
