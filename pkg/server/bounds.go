package server

import (
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
)

// Bounds on the client-supplied strings of a request that the gateway
// stores (the usage record, the rollups), logs or echoes in an error, and
// forwards. A request over one is refused with 400 in its API's error
// shape right after it is decoded: before routing (whose 404 would echo
// the model), admission, any store write or upstream call. The refusal
// names the field and its length, never its value.
const (
	// MaxModelBytes bounds the model (route) name: config route names are
	// short, so a longer one could never match.
	MaxModelBytes = 256
	// MaxUserBytes bounds the end-user id (OpenAI's user, Anthropic's
	// metadata.user_id; both APIs document 256 or less).
	MaxUserBytes = 256
	// MaxMetadataPairs, MaxMetadataKeyBytes and MaxMetadataValueBytes
	// bound request metadata (OpenAI's documented limits).
	MaxMetadataPairs      = 16
	MaxMetadataKeyBytes   = 64
	MaxMetadataValueBytes = 512
)

// checkBounds refuses a decoded request carrying a string over its bound.
// On refusal the route is cleared, so the record written for the refused
// request does not carry it either.
func checkBounds(req *exchange.Request) *gwerr.Error {
	tooLong := func(param string, n, limit int) *gwerr.Error {
		return gwerr.New(gwerr.InvalidRequest, "%s is %d bytes long; the limit is %d", param, n, limit).WithParam(param).WithCode("string_above_max_length")
	}
	if n := len(req.Route); n > MaxModelBytes {
		req.Route = ""
		return tooLong("model", n, MaxModelBytes)
	}
	if p := req.Prompt; p != nil {
		if n := len(p.User); n > MaxUserBytes {
			return tooLong("user", n, MaxUserBytes)
		}
		if len(p.Metadata) > MaxMetadataPairs {
			return gwerr.New(gwerr.InvalidRequest, "metadata has %d pairs; the limit is %d", len(p.Metadata), MaxMetadataPairs).
				WithParam("metadata").WithCode("too_many_metadata_pairs")
		}
		for k, v := range p.Metadata {
			if len(k) > MaxMetadataKeyBytes {
				return tooLong("metadata key", len(k), MaxMetadataKeyBytes)
			}
			if len(v) > MaxMetadataValueBytes {
				return tooLong("metadata."+k, len(v), MaxMetadataValueBytes)
			}
		}
	}
	if e := req.Embed; e != nil {
		if n := len(e.User); n > MaxUserBytes {
			return tooLong("user", n, MaxUserBytes)
		}
	}
	return nil
}
