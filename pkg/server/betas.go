package server

import (
	"log/slog"
	"slices"
	"strings"

	"github.com/llmgw/llmgw/pkg/exchange"
)

// filterBetas keeps, of the anthropic-beta values a client sent (comma
// separated, in one or more headers), only those on allow
// (server.anthropic_betas; "*" keeps all). A beta can switch on a billed
// server-side tool or change what a request may cost, so the operator
// decides which reach an upstream. It returns the dropped values (at most
// a few, each clipped), for the log line.
func filterBetas(req *exchange.Request, allow []string) []string {
	vs := req.Header["Anthropic-Beta"]
	if len(vs) == 0 || slices.Contains(allow, "*") {
		return nil
	}
	var kept, dropped []string
	for _, v := range vs {
		for b := range strings.SplitSeq(v, ",") {
			b = strings.TrimSpace(b)
			switch {
			case b == "":
			case slices.Contains(allow, b):
				kept = append(kept, b)
			case len(dropped) < 8:
				dropped = append(dropped, clip(b))
			}
		}
	}
	if len(kept) == 0 {
		req.Header.Del("anthropic-beta")
	} else {
		req.Header["Anthropic-Beta"] = []string{strings.Join(kept, ",")}
	}
	return dropped
}

// betas applies filterBetas to the request and logs what it dropped.
func (x *exchangeState) betas(allow []string) {
	if dropped := filterBetas(x.req, allow); len(dropped) > 0 {
		x.h.log.LogAttrs(x.r.Context(), slog.LevelInfo, "anthropic-beta values dropped (not in server.anthropic_betas)",
			slog.String("request_id", x.req.ID), slog.Any("dropped", dropped))
	}
}
