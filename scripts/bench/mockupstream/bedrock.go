package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
)

// bedrockHandler is the mock's Bedrock runtime side: POST
// /model/{id}/converse answers a Converse JSON body, POST
// /model/{id}/converse-stream an application/vnd.amazon.eventstream body
// of binary event-stream frames with valid CRCs (the SDK's encoder), one
// event per write: messageStart, a contentBlockDelta per word, contentBlockStop,
// messageStop and metadata with usage, as Bedrock sends them.
type bedrockHandler struct {
	words   []string
	gap     time.Duration
	latency time.Duration
}

func (h *bedrockHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	in := (len(body) + 3) / 4
	out := len(h.words)
	w.Header().Set("x-amzn-RequestId", "0a1b2c3d-mock-request-id")
	if h.latency > 0 {
		select {
		case <-time.After(h.latency):
		case <-r.Context().Done():
			return
		}
	}
	usage := fmt.Sprintf(`{"inputTokens":%d,"outputTokens":%d,"totalTokens":%d}`, in, out, in+out)
	if strings.HasSuffix(r.URL.Path, "/converse") {
		text, _ := json.Marshal(strings.Join(h.words, ""))
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"output":{"message":{"role":"assistant","content":[{"text":%s}]}},"stopReason":"end_turn","usage":%s,"metrics":{"latencyMs":1}}`, text, usage)
		return
	}
	if !strings.HasSuffix(r.URL.Path, "/converse-stream") {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Amzn-ErrorType", "UnknownOperationException")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"message":"the mock serves converse and converse-stream"}`)
		return
	}
	w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	enc := eventstream.NewEncoder()
	send := func(typ, payload string) bool {
		var msg eventstream.Message
		msg.Headers.Set(":message-type", eventstream.StringValue("event"))
		msg.Headers.Set(":event-type", eventstream.StringValue(typ))
		msg.Headers.Set(":content-type", eventstream.StringValue("application/json"))
		msg.Payload = []byte(payload)
		if enc.Encode(w, msg) != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !send("messageStart", `{"role":"assistant"}`) {
		return
	}
	for i, word := range h.words {
		if i > 0 && h.gap > 0 {
			select {
			case <-time.After(h.gap):
			case <-r.Context().Done():
				return
			}
		}
		q, _ := json.Marshal(word)
		if !send("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":`+string(q)+`}}`) {
			return
		}
	}
	if send("contentBlockStop", `{"contentBlockIndex":0}`) && send("messageStop", `{"stopReason":"end_turn"}`) {
		send("metadata", `{"usage":`+usage+`,"metrics":{"latencyMs":1}}`)
	}
}
