package openaicompat_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"testing"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/provider/openaicompat"
	"github.com/llmgw/llmgw/pkg/provider/rechunk"
	"github.com/llmgw/llmgw/pkg/wire/chatwire"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/provider"
)

// pipeUpstream serves one streamed response over an in-memory connection:
// the response header, then the same chunk forever, each chunk written in
// two pieces that split it in the middle (so every other read from the
// connection ends inside a chunk and is re-framed).
func pipeUpstream(b *testing.B) func(ctx context.Context, network, addr string) (net.Conn, error) {
	chunk := []byte(fmt.Sprintf("%x\r\n%s\r\n", len(benchChunk), benchChunk))
	half := len(chunk) / 2
	return func(ctx context.Context, _, _ string) (net.Conn, error) {
		client, server := net.Pipe()
		go func() {
			defer server.Close()
			if _, err := http.ReadRequest(bufio.NewReader(server)); err != nil {
				return
			}
			if _, err := server.Write([]byte("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")); err != nil {
				return
			}
			for {
				if _, err := server.Write(chunk[:half]); err != nil {
					return
				}
				if _, err := server.Write(chunk[half:]); err != nil {
					return
				}
			}
		}()
		return client, nil
	}
}

// BenchmarkRelaySSEChunkHTTP11 is BenchmarkRelaySSEChunk through a real
// http.Transport whose connection re-frames chunked bodies
// (pkg/provider/rechunk), with every chunk split across two reads: one op
// is one relayed chunk, so allocs/op is what the re-framing costs per
// frame (the goal is 0).
func BenchmarkRelaySSEChunkHTTP11(b *testing.B) {
	tr := rechunk.Wrap(&http.Transport{DialContext: pipeUpstream(b)})
	defer tr.CloseIdleConnections()
	a, err := openaicompat.New("bench", &config.Provider{Kind: "openai", BaseURL: "http://upstream.invalid/v1"}, &http.Client{Transport: tr})
	if err != nil {
		b.Fatal(err)
	}
	req, err := chatwire.Parse(benchRequest, chatwire.Limits{})
	if err != nil {
		b.Fatal(err)
	}
	rq := &exchange.Request{API: exchange.Chat, Body: benchRequest, Stream: req.Stream, WantsUsage: req.WantsUsage()}
	s, err := a.Send(context.Background(), &provider.Call{Req: rq, Step: config.Step{Model: "gpt-4.1-2025-04-14"}})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.ReportAllocs()
	b.SetBytes(int64(len(benchChunk)))
	for b.Loop() {
		f, err := s.Next()
		if err != nil || !f.Commits() {
			b.Fatalf("frame %+v, err %v", f, err)
		}
	}
}
