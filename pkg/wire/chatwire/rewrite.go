package chatwire

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/wire/jsonb"
)

// maxDepth returns the deepest nesting of a valid JSON document.
func maxDepth(b []byte) int {
	depth, deepest := 0, 0
	for i := 0; i < len(b); {
		switch b[i] {
		case '"':
			i = stringEnd(b, i+1)
			continue
		case '{', '[':
			depth++
			if depth > deepest {
				deepest = depth
			}
		case '}', ']':
			depth--
		}
		i++
	}
	return deepest
}

// member is one top-level member of a JSON object: the decoded key and the
// byte span of its value.
type member struct {
	key        string
	start, end int // value span
}

// members scans the top-level members of a valid JSON object.
func members(b []byte, fn func(m member) bool) error {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return gwerr.New(gwerr.InvalidRequest, "request body must be a JSON object")
	}
	i++
	for {
		i = skipSpace(b, i)
		if i < len(b) && b[i] == '}' {
			return nil
		}
		if i >= len(b) || b[i] != '"' {
			return gwerr.New(gwerr.InvalidRequest, "request body is not a valid JSON object")
		}
		ks := i
		i = skipString(b, i)
		key := string(b[ks+1 : i-1])
		if bytes.IndexByte(b[ks:i], '\\') >= 0 {
			if err := json.Unmarshal(b[ks:i], &key); err != nil {
				return gwerr.New(gwerr.InvalidRequest, "request body has an invalid key")
			}
		}
		i = skipSpace(b, i)
		i++ // ':'
		i = skipSpace(b, i)
		vs := i
		i = skipValue(b, i)
		if !fn(member{key: key, start: vs, end: i}) {
			return nil
		}
		i = skipSpace(b, i)
		if i < len(b) && b[i] == ',' {
			i++
		}
	}
}

// topLevelKeys returns the set of top-level keys and rejects duplicates,
// which JSON parsers resolve differently (first wins or last wins): the
// gateway and the upstream must never disagree on which model was asked for.
func topLevelKeys(b []byte) (map[string]bool, error) {
	keys := make(map[string]bool, 16)
	var dup string
	err := members(b, func(m member) bool {
		if keys[m.key] {
			dup = m.key
			return false
		}
		keys[m.key] = true
		return true
	})
	if err != nil {
		return nil, err
	}
	if dup != "" {
		return nil, gwerr.New(gwerr.InvalidRequest, "field %q appears more than once", dup).WithParam(dup)
	}
	return keys, nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index just past the string starting at b[i] == '"'.
func skipString(b []byte, i int) int { return stringEnd(b, i+1) }

// stringEnd returns the index just past the closing quote of the string
// whose contents start at b[i] (len(b) if it is not closed). Strings
// without escapes, by far the most common and the longest, are crossed
// with bytes.IndexByte (vectorized) instead of byte by byte.
func stringEnd(b []byte, i int) int {
	if i >= len(b) {
		return len(b)
	}
	if q := bytes.IndexByte(b[i:], '"'); q >= 0 && bytes.IndexByte(b[i:i+q], '\\') < 0 {
		return i + q + 1
	}
	for i < len(b) {
		switch b[i] {
		case '\\':
			i += 2
			continue
		case '"':
			return i + 1
		}
		i++
	}
	return len(b)
}

// skipValue returns the index just past the value starting at b[i].
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	}
	for i < len(b) {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
		i++
	}
	return i
}

// RewriteOptions says what Rewrite changes in a request body.
type RewriteOptions struct {
	Model        string // the upstream model id that replaces "model"
	IncludeUsage bool   // set stream_options.include_usage to true
	// MaxTokens, when > 0 and the body has no output limit, adds
	// MaxTokensField (default "max_tokens") with this value. For the chat
	// fields (max_tokens, max_completion_tokens) either one counts as a
	// limit; any other field (the Responses API's max_output_tokens) only
	// counts itself.
	MaxTokens      int
	MaxTokensField string
	// Variant, when set, is the serving target's prompt variant, applied
	// with byte-level edits before the rest (see Variant).
	Variant *Variant
}

// isLimitField reports whether key k is an output limit for a body whose
// cap goes in field.
func isLimitField(k, field string) bool {
	switch field {
	case "", "max_tokens", "max_completion_tokens":
		return k == "max_tokens" || k == "max_completion_tokens"
	}
	return k == field
}

// Rewrite returns body with only the model replaced and, when asked,
// stream_options.include_usage set, the output cap added and the variant
// applied. Every other byte, including unknown and
// vendor-specific fields, their order and their formatting, is kept. body
// must have passed Parse (or, for another OpenAI API, CheckObject). dst is
// reused when it has room.
func Rewrite(dst, body []byte, opt RewriteOptions) ([]byte, error) {
	if opt.Variant != nil {
		var err error
		if body, err = applyVariant(body, opt.Variant); err != nil {
			return nil, err
		}
	}
	var edits [2]span
	n := 0
	var soSeen, maxSeen bool
	err := members(body, func(m member) bool {
		if isLimitField(m.key, opt.MaxTokensField) {
			maxSeen = true
		}
		switch m.key {
		case "model":
			if n == len(edits) {
				return false // not a body Parse accepted (duplicate keys)
			}
			edits[n] = span{m.start, m.end, jsonb.AppendString(nil, opt.Model)}
			n++
		case "stream_options":
			soSeen = true
			if opt.IncludeUsage && n < len(edits) {
				edits[n] = span{m.start, m.end, withIncludeUsage(body[m.start:m.end])}
				n++
			}
		}
		return n < len(edits) || opt.MaxTokens > 0
	})
	if err != nil {
		return nil, err
	}
	if n > 1 && edits[1].start < edits[0].start {
		edits[0], edits[1] = edits[1], edits[0]
	}
	out := dst[:0]
	pos := 0
	for _, e := range edits[:n] {
		out = append(out, body[pos:e.start]...)
		out = append(out, e.with...)
		pos = e.end
	}
	addUsage := opt.IncludeUsage && !soSeen
	addMax := opt.MaxTokens > 0 && !maxSeen
	if !addUsage && !addMax {
		return append(out, body[pos:]...), nil
	}
	end := bytes.LastIndexByte(body, '}')
	out = append(out, body[pos:end]...)
	if addUsage {
		out = append(out, `,"stream_options":{"include_usage":true}`...)
	}
	if addMax {
		field := opt.MaxTokensField
		if field == "" {
			field = "max_tokens"
		}
		out = append(out, `,"`...)
		out = append(out, field...)
		out = append(out, `":`...)
		out = strconv.AppendInt(out, int64(opt.MaxTokens), 10)
	}
	return append(out, body[end:]...), nil
}

// withIncludeUsage returns a stream_options object with include_usage true,
// keeping its other members.
func withIncludeUsage(raw []byte) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil || m == nil {
		return []byte(`{"include_usage":true}`)
	}
	m["include_usage"] = json.RawMessage("true")
	out, _ := json.Marshal(m)
	return out
}
