// Package lambdaemu emulates the two AWS pieces in front of a streaming Go
// Lambda function, so the real bootstrap binary can be run and tested
// without AWS: the Lambda Runtime API (next / response / error, with
// deadlines) and a Function URL front end that decodes the streamed
// application/vnd.awslambda.http-integration-response body (a JSON prelude
// with status and headers, 8 NUL bytes, then the body as it is written).
// The AWS Runtime Interface Emulator does not support response streaming,
// hence this package.
package lambdaemu

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

const prefix = "/2018-06-01/runtime"

// Runtime is an emulated Lambda Runtime API on loopback.
type Runtime struct {
	srv   *http.Server
	ln    net.Listener
	queue chan *invocation
	mu    sync.Mutex
	open  map[string]*invocation
	seq   atomic.Int64
	// InitError receives the body of an init error report, if any.
	InitError chan []byte
	// TraceID is the X-Ray trace header (Lambda-Runtime-Trace-Id) sent
	// with each invocation; empty sends an all-zero root, unsampled. Set
	// it before the first Invoke.
	TraceID string

	onNext atomic.Pointer[func()]
}

// SetOnNext sets a hook called at the start of every GET
// .../invocation/next, before it waits for an event: the moment the
// function is ready for its first invocation, or has returned from the
// previous one. It runs on the request's goroutine, so it must be safe for
// concurrent use and quick; nil removes it. Set it before the function
// starts to see its first request.
func (rt *Runtime) SetOnNext(f func()) {
	if f == nil {
		rt.onNext.Store(nil)
		return
	}
	rt.onNext.Store(&f)
}

type invocation struct {
	id       string
	event    []byte
	deadline time.Time
	result   chan *Response
	once     sync.Once
}

// Response is a function's answer to one invocation, as a Function URL
// client would see it.
type Response struct {
	Status  int
	Headers http.Header
	Cookies []string
	// Body streams the response body as the function writes it.
	Body io.ReadCloser
	// Err is set when the function reported an invocation error instead.
	Err error
}

type prelude struct {
	StatusCode int               `json:"statusCode"`
	Headers    map[string]string `json:"headers"`
	Cookies    []string          `json:"cookies"`
}

// Start listens on a free loopback port.
func Start() (*Runtime, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	rt := &Runtime{ln: ln, queue: make(chan *invocation, 16), open: map[string]*invocation{}, InitError: make(chan []byte, 1)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+prefix+"/invocation/next", rt.next)
	mux.HandleFunc("POST "+prefix+"/invocation/{id}/response", rt.response)
	mux.HandleFunc("POST "+prefix+"/invocation/{id}/error", rt.invocationError)
	mux.HandleFunc("POST "+prefix+"/init/error", rt.initError)
	rt.srv = &http.Server{Handler: mux}
	go rt.srv.Serve(ln)
	return rt, nil
}

// Addr is the value for AWS_LAMBDA_RUNTIME_API.
func (rt *Runtime) Addr() string { return rt.ln.Addr().String() }

// Close stops the emulator.
func (rt *Runtime) Close() error { return rt.srv.Close() }

// Invoke queues an event with a deadline and waits for the function to
// start answering (its prelude) or to report an error.
func (rt *Runtime) Invoke(ctx context.Context, event []byte, deadline time.Time) (*Response, error) {
	inv := &invocation{id: "req-" + strconv.FormatInt(rt.seq.Add(1), 10), event: event, deadline: deadline, result: make(chan *Response, 1)}
	rt.mu.Lock()
	rt.open[inv.id] = inv
	rt.mu.Unlock()
	select {
	case rt.queue <- inv:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case r := <-inv.result:
		return r, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (rt *Runtime) next(w http.ResponseWriter, r *http.Request) {
	if f := rt.onNext.Load(); f != nil {
		(*f)()
	}
	select {
	case inv := <-rt.queue:
		h := w.Header()
		h.Set("Lambda-Runtime-Aws-Request-Id", inv.id)
		h.Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(inv.deadline.UnixMilli(), 10))
		h.Set("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:us-east-1:123456789012:function:llmgw-test-gateway")
		trace := rt.TraceID
		if trace == "" {
			trace = "Root=1-00000000-000000000000000000000000;Sampled=0"
		}
		h.Set("Lambda-Runtime-Trace-Id", trace)
		h.Set("Content-Type", "application/json")
		w.Write(inv.event)
	case <-r.Context().Done():
	}
}

func (rt *Runtime) take(id string) *invocation {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	inv := rt.open[id]
	delete(rt.open, id)
	return inv
}

// response relays a streamed response: prelude first, then the body.
func (rt *Runtime) response(w http.ResponseWriter, r *http.Request) {
	inv := rt.take(r.PathValue("id"))
	if inv == nil {
		http.Error(w, "unknown invocation", http.StatusBadRequest)
		return
	}
	br := bufio.NewReader(r.Body)
	var head []byte
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/vnd.awslambda.http-integration-response") {
		var err error
		head, err = readPrelude(br)
		if err != nil {
			inv.result <- &Response{Err: fmt.Errorf("bad prelude: %w", err)}
			return
		}
	}
	var p prelude
	if len(head) > 0 {
		if err := json.Unmarshal(head, &p); err != nil {
			inv.result <- &Response{Err: fmt.Errorf("bad prelude JSON: %w", err)}
			return
		}
	}
	if p.StatusCode == 0 {
		p.StatusCode = 200
	}
	pr, pw := io.Pipe()
	hdr := http.Header{}
	for k, v := range p.Headers {
		hdr.Set(k, v)
	}
	inv.result <- &Response{Status: p.StatusCode, Headers: hdr, Cookies: p.Cookies, Body: pr}
	// Copy as it arrives: every chunk the function writes reaches the client.
	buf := make([]byte, 32<<10)
	for {
		n, err := br.Read(buf)
		if n > 0 {
			if _, werr := pw.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			if err == io.EOF {
				if t := r.Trailer.Get("Lambda-Runtime-Function-Error-Type"); t != "" {
					err = fmt.Errorf("function error in stream: %s", t)
				}
			}
			pw.CloseWithError(err)
			break
		}
	}
	w.WriteHeader(http.StatusAccepted)
}

// readPrelude reads up to the 8 NUL bytes that end the JSON prelude.
func readPrelude(br *bufio.Reader) ([]byte, error) {
	var head []byte
	for {
		b, err := br.ReadByte()
		if err != nil {
			return nil, err
		}
		head = append(head, b)
		if bytes.HasSuffix(head, make([]byte, 8)) {
			return head[:len(head)-8], nil
		}
		if len(head) > 1<<20 {
			return nil, errors.New("prelude too long")
		}
	}
}

func (rt *Runtime) invocationError(w http.ResponseWriter, r *http.Request) {
	inv := rt.take(r.PathValue("id"))
	body, _ := io.ReadAll(r.Body)
	if inv != nil {
		inv.result <- &Response{Err: fmt.Errorf("invocation error: %s", body)}
	}
	w.WriteHeader(http.StatusAccepted)
}

func (rt *Runtime) initError(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	select {
	case rt.InitError <- body:
	default:
	}
	w.WriteHeader(http.StatusAccepted)
}
