package bedrock_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"runtime"
	"strings"
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

// lateCopyClient answers at once and, like net/http's transport, copies
// what is left of the request body after the response has been handed
// back, which is after the SDK has closed the body.
type lateCopyClient struct{ copyErr chan error }

type closeSignal struct {
	io.ReadCloser
	closed chan struct{}
}

func (c closeSignal) Close() error { close(c.closed); return c.ReadCloser.Close() }

func (l *lateCopyClient) Do(r *http.Request) (*http.Response, error) {
	body := r.Body
	io.Copy(io.Discard, io.LimitReader(body, r.ContentLength))
	closed := make(chan struct{})
	r.Body = closeSignal{body, closed}
	go func() {
		<-closed
		_, err := io.Copy(io.Discard, body) // net/http's check for extra body bytes
		l.copyErr <- err
	}()
	return &http.Response{StatusCode: 200, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Request: r,
		Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(okConverse))}, nil
}

// TestRequestBodyCopyAfterClose: the last copy of a request body after the
// SDK closed it must end cleanly. (smithy-go's body WriteTo answers io.EOF
// there; net/http then counts the request as failed and closes the
// connection under a ConverseStream response that has already begun.)
func TestRequestBodyCopyAfterClose(t *testing.T) {
	awsEnv(t)
	lc := &lateCopyClient{copyErr: make(chan error, 1)}
	a, err := bedrock.New(context.Background(), "br", &config.Provider{Kind: "bedrock", Region: "us-east-1",
		Endpoint: "http://bedrock.invalid"}, lc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Send(context.Background(), newCall(t, `{"model":"m","messages":[{"role":"user","content":"Hi"}]}`)); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-lc.copyErr:
		if err != nil {
			t.Errorf("copying the closed request body failed with %v; net/http would close the connection", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the SDK never closed the request body")
	}
}
