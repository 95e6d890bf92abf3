// Package rechunk makes HTTP/1.1 response bodies hand over every byte as
// soon as it arrives, even when an upstream stalls in the middle of an HTTP
// chunk.
//
// Go's chunked-body reader (net/http/internal/chunked.go) keeps reading
// until the current chunk ends or the caller's buffer is full: when an
// upstream sends part of a chunk and stalls, the bytes already received
// are held back until the rest comes. For a streamed LLM response that
// means a content frame that has arrived is not relayed, and the stall is
// taken for a first-token timeout.
//
// The fix sits under net/http, on the connection: [Wrap] gives a transport
// connections that re-frame chunked response bodies as they are read. Each
// read from the network that ends inside a chunk becomes a complete chunk
// of the bytes received ("<n>\r\n<n bytes>\r\n"), and the rest of the
// original chunk follows as more chunks when it arrives. net/http's reader
// then always ends a read at a chunk boundary, so it returns what is
// there. Everything else - status lines, headers, Content-Length bodies,
// trailers, keep-alive, TLS, HTTP/2 - passes through untouched; on any
// framing it does not understand the connection switches to passing bytes
// through as they are, so net/http sees (and reports) exactly what the
// upstream sent. The re-framing allocates nothing per read.
package rechunk

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"time"
)

// Wrap sets t's dialers so that its HTTP/1.1 connections re-frame chunked
// bodies (see the package comment), and returns t. Plain connections are
// wrapped in DialContext; TLS connections are dialed and handshaken in
// DialTLSContext (with t's TLSClientConfig, TLSHandshakeTimeout and, when
// t.ForceAttemptHTTP2 is set, HTTP/2 offered): an HTTP/2 connection is
// returned as it is (its bodies already deliver data as it arrives), an
// HTTP/1.1 one wrapped. Connections through a proxy reach the proxy through
// DialContext: an HTTPS tunnel is passed through untouched (it carries
// ciphertext), so only direct and plain-proxy connections are re-framed.
//
// Wrap is meant for transports that send POST requests (a HEAD response
// announces a body it does not have; a HEAD through a wrapped connection
// makes the connection pass bytes through from then on).
func Wrap(t *http.Transport) *http.Transport {
	dial := t.DialContext
	if dial == nil {
		dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return NewConn(c), nil
	}
	t.DialTLSContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		raw, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		cfg := &tls.Config{}
		if t.TLSClientConfig != nil {
			cfg = t.TLSClientConfig.Clone()
		}
		if cfg.ServerName == "" {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				host = addr
			}
			cfg.ServerName = host
		}
		if len(cfg.NextProtos) == 0 {
			cfg.NextProtos = []string{"http/1.1"}
			if t.ForceAttemptHTTP2 {
				cfg.NextProtos = []string{"h2", "http/1.1"}
			}
		}
		tc := tls.Client(raw, cfg)
		hctx := ctx
		if t.TLSHandshakeTimeout > 0 {
			var cancel context.CancelFunc
			hctx, cancel = context.WithTimeout(ctx, t.TLSHandshakeTimeout)
			defer cancel()
		}
		if err := tc.HandshakeContext(hctx); err != nil {
			raw.Close()
			return nil, err
		}
		if tc.ConnectionState().NegotiatedProtocol == "h2" {
			return tc, nil // net/http needs the *tls.Conn to speak HTTP/2
		}
		return NewConn(tc), nil
	}
	return t
}
