package bedrock

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/ingress/messages"
	"github.com/llmgw/llmgw/pkg/wire/bedrockwire"
	"github.com/llmgw/llmgw/pkg/wire/jsonb"
)

// countMembers are the members of CountTokens' input.converse.
var countMembers = []string{"messages", "system", "toolConfig", "additionalModelRequestFields"}

// DecodeCount implements ingress.Counter: a CountTokens body,
// {"input":{"converse":{...}}} (the Converse members that count) or
// {"input":{"invokeModel":{"body":"<base64 InvokeModel body>"}}}. An
// InvokeModel body is counted as the Messages request it stands for (API
// exchange.Messages), so an Anthropic target counts it upstream.
func (Ingress) DecodeCount(r *http.Request, body []byte, req *exchange.Request) error {
	keys, err := checkBody(body)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if k != "input" {
			return bad(k, "Malformed input request: extraneous key [%s] is not permitted, please reformat your input and try again.", k)
		}
	}
	if err := jsonb.CheckKeys(body); err != nil {
		return err
	}
	var cr bedrockwire.CountTokensRequest
	if err := json.Unmarshal(body, &cr); err != nil {
		return decodeError(err)
	}
	id := modelID(r)
	switch in := cr.Input; {
	case len(in.Converse) > 0 && in.InvokeModel == nil:
		prompt, lost, err := decodeConverse(in.Converse, countMembers)
		if err != nil {
			return err
		}
		req.Prompt, req.Body, req.Untranslated, req.Route = prompt, in.Converse, lost, id
		return nil
	case in.InvokeModel != nil && len(in.Converse) == 0:
		if len(bytes.TrimSpace(in.InvokeModel.Body)) == 0 {
			return bad("input.invokeModel.body", "input.invokeModel.body: required")
		}
		req.API = exchange.Messages
		return decodeInvoke(r, in.InvokeModel.Body, req, id, false, true)
	}
	return gwerr.New(gwerr.InvalidRequest, "input: must set exactly one of converse, invokeModel").WithParam("input")
}

// WriteCount implements ingress.Counter: {"inputTokens": N}; the
// gateway's own estimate is marked with the x-gateway-estimate header.
func (Ingress) WriteCount(w http.ResponseWriter, req *exchange.Request, tokens int, estimated bool) int {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if estimated {
		h.Set(messages.EstimateHeader, "true")
	}
	b := strconv.AppendInt(append(make([]byte, 0, 32), `{"inputTokens":`...), int64(tokens), 10)
	b = append(b, '}')
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	w.Write(b)
	return http.StatusOK
}
