package rechunk

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/internal/testkit"
)

// rawServer answers each request on a connection with the next raw
// response written by respond (n counts requests across connections).
type rawServer struct {
	ln    net.Listener
	conns atomic.Int32
}

func newRawServer(t *testing.T, respond func(c net.Conn, n int)) *rawServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{ln: ln}
	var n atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.conns.Add(1)
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					io.Copy(io.Discard, req.Body)
					respond(c, int(n.Add(1)))
				}
			}()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return s
}

func (s *rawServer) url() string { return "http://" + s.ln.Addr().String() + "/" }

func wrappedClient() *http.Client { return &http.Client{Transport: Wrap(&http.Transport{})} }

const sseHeader = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"

// TestStallInsideAChunkHandsOverWhatArrived: the upstream declares a chunk
// of 100 bytes, sends 30 and stalls; the body's reader gets the 30 at once.
func TestStallInsideAChunkHandsOverWhatArrived(t *testing.T) {
	release := make(chan struct{})
	first := strings.Repeat("a", 30)
	srv := newRawServer(t, func(w net.Conn, _ int) {
		io.WriteString(w, sseHeader+"64\r\n"+first)
		<-release
		io.WriteString(w, strings.Repeat("b", 70)+"\r\n0\r\n\r\n")
	})
	defer close(release)
	resp, err := wrappedClient().Post(srv.url(), "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got := make(chan string, 1)
	go func() {
		buf := make([]byte, 4096)
		n, _ := resp.Body.Read(buf)
		got <- string(buf[:n])
	}()
	select {
	case s := <-got:
		if s != first {
			t.Fatalf("read %q, want the 30 bytes that arrived", s)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the bytes that arrived were held back until the chunk's end")
	}
}

// TestBodiesPassThroughUnchanged: random bodies in random chunks (with
// extensions and trailers), sent in random pieces, mixed with
// Content-Length and empty responses on one keep-alive connection, read
// back byte for byte.
func TestBodiesPassThroughUnchanged(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	type reply struct {
		wire string // what the server sends
		body string // what the client must read
	}
	var replies []reply
	for i := 0; i < 60; i++ {
		body := make([]byte, rng.IntN(20000))
		for j := range body {
			body[j] = byte(rng.IntN(256))
		}
		switch i % 4 {
		case 0:
			replies = append(replies, reply{fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body), string(body)})
		case 1:
			replies = append(replies, reply{"HTTP/1.1 204 No Content\r\n\r\n", ""})
		default:
			var w strings.Builder
			w.WriteString("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")
			for rest := body; len(rest) > 0; {
				k := min(len(rest), 1+rng.IntN(5000))
				if rng.IntN(3) == 0 {
					fmt.Fprintf(&w, "%X;name=value\r\n", k)
				} else {
					fmt.Fprintf(&w, "%x\r\n", k)
				}
				w.Write(rest[:k])
				w.WriteString("\r\n")
				rest = rest[k:]
			}
			if i%4 == 3 {
				w.WriteString("0\r\nX-Trailer: yes\r\n\r\n")
			} else {
				w.WriteString("0\r\n\r\n")
			}
			replies = append(replies, reply{w.String(), string(body)})
		}
	}
	srv := newRawServer(t, func(w net.Conn, n int) {
		wire := replies[n-1].wire
		for len(wire) > 0 { // in random pieces, each its own TCP write
			k := min(len(wire), 1+rng.IntN(3000))
			io.WriteString(w, wire[:k])
			wire = wire[k:]
		}
	})
	client := wrappedClient()
	for i, r := range replies {
		resp, err := client.Post(srv.url(), "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatalf("reply %d: %v", i, err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || !bytes.Equal(got, []byte(r.body)) {
			t.Fatalf("reply %d: read %d bytes (err %v), want %d", i, len(got), err, len(r.body))
		}
		if i%4 == 3 && resp.Trailer.Get("X-Trailer") != "yes" {
			t.Errorf("reply %d: trailer %v", i, resp.Trailer)
		}
	}
	if n := srv.conns.Load(); n != 1 {
		t.Errorf("%d connections for %d requests: keep-alive lost", n, len(replies))
	}
}

// TestMalformedFramingIsStillAnError: what net/http would refuse it still
// refuses: the connection passes the bad bytes through.
func TestMalformedFramingIsStillAnError(t *testing.T) {
	for name, wire := range map[string]string{
		"bad size":      sseHeader + "zz\r\nabc\r\n0\r\n\r\n",
		"bad chunk end": sseHeader + "3\r\nabcXY5\r\nhello\r\n0\r\n\r\n",
		"cut":           sseHeader + "10\r\nabc",
	} {
		srv := newRawServer(t, func(c net.Conn, _ int) { io.WriteString(c, wire); c.Close() })
		resp, err := wrappedClient().Post(srv.url(), "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if err == nil {
			t.Errorf("%s: read the whole body without an error", name)
		}
	}
}

// TestTLSConnections: over TLS with HTTP/1.1 the connection re-frames; when
// HTTP/2 is negotiated it is net/http's own.
func TestTLSConnections(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor == 2 {
			io.WriteString(w, "over h2")
			return
		}
		c, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		io.WriteString(c, sseHeader+"40\r\n"+strings.Repeat("x", 16))
		<-release
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	roots := srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs

	h1 := &http.Client{Transport: Wrap(&http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}})}
	resp, err := h1.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan int, 1)
	go func() {
		buf := make([]byte, 4096)
		n, _ := resp.Body.Read(buf)
		got <- n
	}()
	select {
	case n := <-got:
		if n != 16 || resp.ProtoMajor != 1 {
			t.Fatalf("read %d bytes over HTTP/%d, want 16 over HTTP/1.1", n, resp.ProtoMajor)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("TLS: the bytes that arrived were held back")
	}
	resp.Body.Close()

	h2 := &http.Client{Transport: Wrap(&http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, ForceAttemptHTTP2: true})}
	resp, err = h2.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.ProtoMajor != 2 || string(b) != "over h2" {
		t.Fatalf("HTTP/%d %q, want HTTP/2", resp.ProtoMajor, b)
	}
}

// piecesConn is a net.Conn whose reads return the wire in the given piece
// sizes (cycled), as a network does.
type piecesConn struct {
	net.Conn
	wire   []byte
	pieces []int
	i      int
}

func (c *piecesConn) Read(p []byte) (int, error) {
	if len(c.wire) == 0 {
		return 0, io.EOF
	}
	k := min(len(p), len(c.wire), c.pieces[c.i%len(c.pieces)])
	c.i++
	n := copy(p, c.wire[:k])
	c.wire = c.wire[n:]
	return n, nil
}

// TestTinyCallerBuffersAndNoIdleBuffer: the network read goes into the
// caller's buffer, so the re-framing must be right whatever its size (down
// to one byte, smaller than a chunk header), and a connection that has
// handed over everything holds no output buffer while it waits.
func TestTinyCallerBuffersAndNoIdleBuffer(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for round := 0; round < 40; round++ {
		body := make([]byte, rng.IntN(9000))
		for j := range body {
			body[j] = byte('a' + rng.IntN(26))
		}
		var w bytes.Buffer
		w.WriteString("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
		for rest := body; len(rest) > 0; {
			k := min(len(rest), 1+rng.IntN(3000))
			fmt.Fprintf(&w, "%x\r\n%s\r\n", k, rest[:k])
			rest = rest[k:]
		}
		w.WriteString("0\r\n\r\n")
		c := NewConn(&piecesConn{wire: w.Bytes(), pieces: []int{1 + rng.IntN(700), 1 + rng.IntN(5), 1 + rng.IntN(4000)}})
		var out bytes.Buffer
		p := make([]byte, 1+rng.IntN(16))
		for {
			n, err := c.Read(p[:1+rng.IntN(len(p))])
			out.Write(p[:n])
			if len(c.out) == 0 && c.pbuf != nil {
				t.Fatalf("round %d: output buffer held after everything was handed over", round)
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		resp, err := http.ReadResponse(bufio.NewReader(&out), nil)
		if err != nil {
			t.Fatalf("round %d: re-framed response: %v", round, err)
		}
		got, err := io.ReadAll(resp.Body)
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("round %d: body %d bytes (err %v), want %d", round, len(got), err, len(body))
		}
	}
}

// TestReadAllocatesNothing: steady-state reads of a chunked stream take
// their buffer from the pool and give it back.
func TestReadAllocatesNothing(t *testing.T) {
	if testkit.RaceEnabled {
		t.Skip("the race detector makes sync.Pool drop items on purpose")
	}
	frame := []byte("1a\r\ndata: {\"x\":\"abcdefghij\"}\n\n\r\n")
	pc := &piecesConn{pieces: []int{17, 100}}
	c := NewConn(pc)
	pc.wire = []byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
	p := make([]byte, 4096)
	for len(pc.wire) > 0 {
		c.Read(p)
	}
	allocs := testing.AllocsPerRun(200, func() {
		pc.wire = frame
		for len(pc.wire) > 0 || len(c.out) > 0 {
			if _, err := c.Read(p); err != nil {
				t.Fatal(err)
			}
		}
	})
	if allocs != 0 {
		t.Errorf("%.1f allocations per relayed chunk", allocs)
	}
}
