package chatwire

import (
	"bytes"

	"github.com/llmgw/llmgw/pkg/wire/jsonb"
)

// Byte-level access to the top-level members of any JSON object body, for
// passthrough adapters of every API (Chat Completions here, Anthropic
// Messages in pkg/provider/anthropic): read or replace a member's value
// without decoding and re-encoding the document, so every other byte -
// unknown fields, their order, their formatting - reaches the upstream as
// the client sent it.

// Members calls fn with the key and the raw value bytes of each top-level
// member of body, a valid JSON object, in document order, until fn returns
// false. Keys are unescaped.
func Members(body []byte, fn func(key string, value []byte) bool) error {
	return members(body, func(m member) bool { return fn(m.key, body[m.start:m.end]) })
}

// EditMembers returns body with the value of each top-level member for which
// edit returns ok replaced by the bytes edit returns; every other byte is
// kept. body must be a valid JSON object. dst is reused when it has room
// (it must not overlap body).
func EditMembers(dst, body []byte, edit func(key string, value []byte) (with []byte, ok bool)) ([]byte, error) {
	out := dst[:0]
	pos := 0
	err := members(body, func(m member) bool {
		with, ok := edit(m.key, body[m.start:m.end])
		if ok {
			out = append(out, body[pos:m.start]...)
			out = append(out, with...)
			pos = m.end
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	return append(out, body[pos:]...), nil
}

// SetMember returns body with the top-level member key set to value (raw
// JSON): its value replaced where body has it, else the member added
// last. Every other byte is kept. body must be a valid JSON object. A
// passthrough adapter sets a target's service_tier with it.
func SetMember(body []byte, key string, value []byte) ([]byte, error) {
	seen := false
	out, err := EditMembers(make([]byte, 0, len(body)+len(key)+len(value)+4), body, func(k string, _ []byte) ([]byte, bool) {
		if k != key {
			return nil, false
		}
		seen = true
		return value, true
	})
	if err != nil || seen {
		return out, err
	}
	end := bytes.LastIndexByte(out, '}')
	sep := ","
	if len(bytes.TrimSpace(out[bytes.IndexByte(out, '{')+1:end])) == 0 {
		sep = "" // an empty object
	}
	res := make([]byte, 0, len(out)+len(key)+len(value)+4)
	res = append(append(res, out[:end]...), sep...)
	res = append(jsonb.AppendString(res, key), ':')
	res = append(append(res, value...), out[end:]...)
	return res, nil
}
