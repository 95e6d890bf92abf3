package bedrock_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"runtime"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/provider/bedrock"
)

// deafTransport answers every request with an event stream that sends its
// first frames and then stalls, and whose body ignores the request's
// context: only closing the body ends a read. It stands for a connection
// that hangs where cancellation does not reach.
type deafTransport struct {
	first  []event
	bodies chan io.ReadCloser
}

func (d *deafTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	io.Copy(io.Discard, r.Body)
	r.Body.Close()
	var frames bytes.Buffer
	writeEvents(&frames, d.first)
	pr, pw := io.Pipe()
	go func() { pw.Write(frames.Bytes()) }() // then never writes again, never closes
	d.bodies <- pr
	return &http.Response{StatusCode: 200, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Request: r,
		Header: http.Header{"Content-Type": {"application/vnd.amazon.eventstream"}}, Body: pr}, nil
}

// TestCancelClosesStream: cancelling the context makes Next return at once
// with the context's cause and closes the event stream, leaving no
// goroutine behind, even when the connection itself ignores cancellation.
func TestCancelClosesStream(t *testing.T) {
	awsEnv(t)
	before := runtime.NumGoroutine()

	dt := &deafTransport{first: textEvents("hello"), bodies: make(chan io.ReadCloser, 1)}
	a, err := bedrock.New(context.Background(), "br", &config.Provider{Kind: "bedrock", Region: "us-east-1",
		Endpoint: "http://bedrock.invalid"}, &http.Client{Transport: dt})
	if err != nil {
		t.Fatal(err)
	}
	cause := errors.New("client went away")
	ctx, cancel := context.WithCancelCause(context.Background())
	s, err := a.Send(ctx, newCall(t, streamHi))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // role, then "hello"
		if _, err := s.Next(); err != nil {
			t.Fatal(err)
		}
	}
	type result struct{ err error }
	done := make(chan result, 1)
	go func() {
		_, err := s.Next() // blocks: the upstream stalls
		done <- result{err}
	}()
	time.Sleep(50 * time.Millisecond)
	cancel(cause)
	select {
	case r := <-done:
		if !errors.Is(r.err, cause) {
			t.Errorf("Next after cancel = %v, want the context's cause", r.err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Next did not return after the context was cancelled")
	}
	// Deliberately no s.Close(): cancellation alone must release everything.
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("goroutines: %d before, %d after cancellation\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}
