package messages

import (
	"net/http"
	"strconv"

	"github.com/llmgw/llmgw/pkg/exchange"
)

// EstimateHeader is set to "true" on a count_tokens answer that is the
// gateway's estimate rather than an upstream's count.
const EstimateHeader = "x-gateway-estimate"

// WriteCount implements ingress.Counter: {"input_tokens": N}, plus
// "estimated": true and the x-gateway-estimate header when the gateway
// estimated it (documented estimator: teams.EstimateInputTokens).
func (Ingress) WriteCount(w http.ResponseWriter, req *exchange.Request, tokens int, estimated bool) int {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	b := append(make([]byte, 0, 64), `{"input_tokens":`...)
	b = strconv.AppendInt(b, int64(tokens), 10)
	if estimated {
		h.Set(EstimateHeader, "true")
		b = append(b, `,"estimated":true`...)
	}
	b = append(b, '}')
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	w.Write(b)
	return http.StatusOK
}
