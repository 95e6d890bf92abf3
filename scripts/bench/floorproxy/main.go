// Command floorproxy is the benchmark's floor: the least a proxy in front of
// the mock upstream can cost. It runs in one of two modes, on loopback:
//
//	floorproxy -mode reverseproxy -upstream 127.0.0.1:9000   # net/http/httputil.ReverseProxy
//	floorproxy -mode tcp          -upstream 127.0.0.1:9000   # raw TCP relay (io.Copy both ways)
//
// The ReverseProxy mode is what any Go HTTP proxy costs at least (read the
// request, forward it on a pooled keep-alive connection, copy the response,
// flushing SSE as it comes); it reads the whole request body first, like the
// gateway (see BufferBody for why a streaming body is not safe). The TCP relay does no HTTP at all: it is the
// absolute floor of an extra process hop.
//
// With -count (reverseproxy mode) it also counts the requests it forwards by
// their X-Amz-Target header (the DynamoDB operation) and serves the counts
// as JSON at GET /__bench/counts; the benchmark puts it in front of the
// DynamoDB emulator to count the gateway's store calls.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"sync"
	"time"
)

func main() {
	mode := flag.String("mode", "reverseproxy", "reverseproxy | tcp")
	listen := flag.String("listen", "127.0.0.1:0", "listen address (loopback only)")
	upstream := flag.String("upstream", "", "upstream host:port (loopback only)")
	addrFile := flag.String("addr-file", "", "write the bound host:port to this file once listening")
	count := flag.Bool("count", false, "reverseproxy mode: count requests by X-Amz-Target, served at GET /__bench/counts")
	flag.Parse()

	if err := checkLoopback(*upstream); err != nil {
		log.Fatalf("floorproxy: -upstream: %v", err)
	}
	if err := checkLoopback(*listen); err != nil {
		log.Fatalf("floorproxy: -listen: %v", err)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	if *addrFile != "" {
		if err := os.WriteFile(*addrFile, []byte(ln.Addr().String()+"\n"), 0o644); err != nil {
			log.Fatal(err)
		}
	}
	switch *mode {
	case "reverseproxy":
		var h http.Handler = BufferBody(NewReverseProxy(*upstream))
		if *count {
			h = &Counter{next: h, counts: map[string]int64{}}
		}
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second}
		log.Fatal(srv.Serve(ln))
	case "tcp":
		log.Fatal(RelayTCP(ln, *upstream))
	default:
		log.Fatalf("floorproxy: unknown -mode %q (want reverseproxy or tcp)", *mode)
	}
}

// checkLoopback accepts host:port whose host is a loopback IP address.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%q: only loopback IP addresses are allowed", addr)
	}
	return nil
}

// NewReverseProxy returns a plain httputil.ReverseProxy to upstream whose
// transport is tuned like the gateway's upstream client (keep-alive pool of
// the same size), so that the comparison is of the proxies, not of their
// pools. ReverseProxy flushes text/event-stream responses as they arrive.
func NewReverseProxy(upstream string) *httputil.ReverseProxy {
	target := &url.URL{Scheme: "http", Host: upstream}
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = pr.In.Host
		},
		Transport: &http.Transport{
			DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          1024,
			MaxIdleConnsPerHost:   256,
			IdleConnTimeout:       90 * time.Second,
			ExpectContinueTimeout: time.Second,
		},
	}
}

// BufferBody reads the whole request body before calling next, as the
// gateway does. Without it a plain ReverseProxy under load now and then cuts
// a streamed response: the HTTP/1 server closes the inbound body once the
// response headers are written, the transport's final read of the request
// body then fails and tears down the upstream connection mid-response
// (golang/go#40747; seen here as "read error during body copy: use of
// closed network connection" and a client-side unexpected EOF).
func BufferBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 64<<20))
			if err != nil {
				http.Error(w, "bad request body", http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(b))
			r.ContentLength = int64(len(b))
		}
		next.ServeHTTP(w, r)
	})
}

// Counter counts forwarded requests by X-Amz-Target and serves the counts.
type Counter struct {
	next   http.Handler
	mu     sync.Mutex
	counts map[string]int64
}

// ServeHTTP implements http.Handler: GET /__bench/counts returns the counts
// as a JSON object (operation -> requests); everything else is forwarded.
func (c *Counter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/__bench/counts" {
		c.mu.Lock()
		b, _ := json.Marshal(c.counts)
		c.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
		return
	}
	op := r.Header.Get("X-Amz-Target")
	if op == "" {
		op = "(none)"
	}
	c.mu.Lock()
	c.counts[op]++
	c.mu.Unlock()
	c.next.ServeHTTP(w, r)
}

// RelayTCP accepts connections on ln and relays each, byte for byte, to a
// new connection to upstream (io.Copy both ways: splice(2) on Linux).
func RelayTCP(ln net.Listener, upstream string) error {
	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	for {
		c, err := ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		go func() {
			defer c.Close()
			u, err := d.Dial("tcp", upstream)
			if err != nil {
				return
			}
			defer u.Close()
			done := make(chan struct{}, 2)
			pipe := func(dst, src net.Conn) {
				io.Copy(dst, src)
				if tc, ok := dst.(*net.TCPConn); ok {
					tc.CloseWrite()
				}
				done <- struct{}{}
			}
			go pipe(u, c)
			go pipe(c, u)
			<-done
			<-done
		}()
	}
}
