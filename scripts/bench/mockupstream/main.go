// Command mockupstream is the benchmark's upstream model on loopback, with
// HTTP keep-alive on, speaking each API's real wire format (non-streaming
// JSON and streams): OpenAI Chat Completions (POST /v1/chat/completions),
// OpenAI Responses (POST /v1/responses) and Anthropic Messages (POST
// /v1/messages), all from pkg/fakellm's Handler, and the Bedrock runtime's
// Converse and ConverseStream (POST /model/{id}/converse[-stream], binary
// event-stream frames). Its flags set the number of
// content chunks, the gap between them and the latency before the first one.
//
//	mockupstream -addr 127.0.0.1:0 -addr-file "$WORK/mock.addr" -chunks 64 -chunk-gap 20ms
//
// GET /healthz answers 200 "ok" (for the cold-start probe); every other
// request is a chat completion answered by the script.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/fakellm"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address (loopback only)")
	addrFile := flag.String("addr-file", "", "write the bound host:port to this file once listening")
	chunks := flag.Int("chunks", 16, "content chunks (words) in each reply")
	gap := flag.Duration("chunk-gap", 0, "gap between two content chunks of a stream")
	latency := flag.Duration("latency", 0, "delay before the first chunk (and before a non-streaming reply)")
	flag.Parse()

	if *chunks < 1 {
		log.Fatal("mockupstream: -chunks must be at least 1")
	}
	script := &config.FakeScript{
		Reply:           Reply(*chunks),
		ChunkDelay:      config.Duration(*gap),
		FirstTokenDelay: config.Duration(*latency),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("ok\n"))
	})
	mux.Handle("POST /model/", &bedrockHandler{words: fakellmChunks(*chunks), gap: *gap, latency: *latency})
	mux.Handle("/", &fakellm.Handler{Script: script})

	ln, err := listenLoopback(*addr)
	if err != nil {
		log.Fatal(err)
	}
	if *addrFile != "" {
		if err := os.WriteFile(*addrFile, []byte(ln.Addr().String()+"\n"), 0o644); err != nil {
			log.Fatal(err)
		}
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second}
	log.Fatal(srv.Serve(ln))
}

// Reply returns a reply of n words: fakellm streams one word per chunk.
func Reply(n int) string {
	return strings.TrimSuffix(strings.Repeat("token ", n), " ")
}

// fakellmChunks is Reply(n) split the way fakellm streams it: one word per
// chunk, each after the first with its leading space.
func fakellmChunks(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = " token"
	}
	out[0] = "token"
	return out
}

// listenLoopback listens on addr after checking that its host is a loopback
// address: benchmark load never leaves the machine.
func listenLoopback(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("mockupstream: -addr %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("mockupstream: -addr %q: only loopback IP addresses are allowed", addr)
	}
	return net.Listen("tcp", addr)
}
