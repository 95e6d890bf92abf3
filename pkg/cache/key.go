package cache

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"hash"
	"slices"
	"strconv"
	"strings"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/wire/jsonb"
)

// keyVersion is part of every fingerprint: changing what the fingerprint
// covers changes it, so old entries are never read with a new meaning.
const keyVersion = "llmgw-response-cache-v1"

// Fingerprint is the hash that keys a request's entry: the SHA-256 of
// everything that determines the answer, and nothing else.
//
// It covers the ingress API, the route, the route's resolved chain (its
// targets, in order: editing the chain starts new entries), the output cap
// the limiter set, the client headers an upstream of the same API receives
// (anthropic-version, anthropic-beta), and the request body in canonical
// form: parsed as JSON, every member (known to the gateway or not, so a
// vendor field that changes the answer changes the key), object keys
// sorted, whitespace dropped, numbers with a fraction or exponent written
// in their shortest form (1.0 and 1 are the same temperature). Left out:
// model (the route stands for it), stream and stream_options (a streaming
// and a non-streaming request share their entry), and the gateway's own
// metadata.pacing and metadata.tag.
//
// ok is false when the body is not a JSON object, or holds a lone UTF-16
// surrogate escape (\ud800 alone: decoding turns each into U+FFFD, so
// prompts that differ there would share a key while an upstream reads them
// differently): such a request is not cacheable. The request itself is
// never stored, only this hash.
func Fingerprint(req *exchange.Request) (string, bool) {
	if jsonb.HasLoneSurrogate(req.Body) {
		return "", false
	}
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(req.Body))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil || doc == nil {
		return "", false
	}
	for _, k := range []string{"model", "stream", "stream_options"} {
		delete(doc, k)
	}
	if md, ok := doc["metadata"].(map[string]any); ok {
		delete(md, "pacing")
		delete(md, "tag")
		if len(md) == 0 {
			delete(doc, "metadata")
		}
	}
	h := sha256.New()
	field := func(s string) {
		h.Write(strconv.AppendInt(nil, int64(len(s)), 10))
		h.Write([]byte{':'})
		h.Write([]byte(s))
	}
	field(keyVersion)
	field(string(req.API))
	field(req.Route)
	ids := make([]string, len(req.Steps))
	for i, s := range req.Steps {
		ids[i] = s.ID
	}
	field(strings.Join(ids, "\n"))
	field(strconv.Itoa(req.OutputCap))
	names := make([]string, 0, len(req.Header))
	for k := range req.Header {
		names = append(names, strings.ToLower(k))
	}
	slices.Sort(names)
	for _, k := range names {
		field(k + ": " + strings.Join(req.Header.Values(k), ", "))
	}
	canonical(h, doc)
	return hex.EncodeToString(h.Sum(nil)), true
}

// canonical writes v as canonical JSON.
func canonical(h hash.Hash, v any) {
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		h.Write([]byte{'{'})
		for i, k := range keys {
			if i > 0 {
				h.Write([]byte{','})
			}
			str(h, k)
			h.Write([]byte{':'})
			canonical(h, v[k])
		}
		h.Write([]byte{'}'})
	case []any:
		h.Write([]byte{'['})
		for i, e := range v {
			if i > 0 {
				h.Write([]byte{','})
			}
			canonical(h, e)
		}
		h.Write([]byte{']'})
	case string:
		str(h, v)
	case json.Number:
		s := v.String()
		if strings.ContainsAny(s, ".eE") {
			if f, err := v.Float64(); err == nil {
				s = strconv.FormatFloat(f, 'g', -1, 64)
			}
		}
		h.Write([]byte(s))
	case bool:
		h.Write([]byte(strconv.FormatBool(v)))
	case nil:
		h.Write([]byte("null"))
	}
}

func str(h hash.Hash, s string) {
	b, _ := json.Marshal(s)
	h.Write(b)
}
