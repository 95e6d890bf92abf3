package chatwire

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/llmgw/llmgw/pkg/wire/jsonb"
)

// Variant is a target's prompt variant (config.Variant) as the chat wire
// format applies it: System replaces the system prompt (every system and
// developer message gives way to one system message); SystemPrefix goes
// before the first system message's text and SystemSuffix after the last
// one's (without a system message they become one); Temperature and TopP
// replace the client's; MaxTokensCap lowers a larger max_tokens or
// max_completion_tokens (a request without one gets the cap through
// RewriteOptions.MaxTokens).
type Variant struct {
	System, SystemPrefix, SystemSuffix string
	Temperature, TopP                  *float64
	MaxTokensCap                       int
}

// SystemText is the text of the system prompt a variant gives a request
// that has none.
func (v *Variant) SystemText() string {
	if v.System != "" {
		return v.System
	}
	return v.SystemPrefix + v.SystemSuffix
}

// EditsSystem reports whether the variant changes the system prompt.
func (v *Variant) EditsSystem() bool {
	return v.System != "" || v.SystemPrefix != "" || v.SystemSuffix != ""
}

func isSystem(role string) bool { return role == "system" || role == "developer" }

// span is one byte-level edit: body[start:end] becomes with.
type span struct {
	start, end int
	with       []byte
}

// applyVariant edits a body that passed Parse byte by byte: only the
// system messages' content (or whole system messages, for an override),
// temperature, top_p and the max tokens fields change; every other byte is
// kept.
func applyVariant(body []byte, v *Variant) ([]byte, error) {
	var edits []span
	var msgs member
	hasMsgs, seenTemp, seenTopP := false, false, false
	num := func(f float64) []byte { return strconv.AppendFloat(nil, f, 'g', -1, 64) }
	err := members(body, func(m member) bool {
		switch m.key {
		case "messages":
			msgs, hasMsgs = m, true
		case "temperature":
			if v.Temperature != nil {
				seenTemp = true
				edits = append(edits, span{m.start, m.end, num(*v.Temperature)})
			}
		case "top_p":
			if v.TopP != nil {
				seenTopP = true
				edits = append(edits, span{m.start, m.end, num(*v.TopP)})
			}
		case "max_tokens", "max_completion_tokens":
			if v.MaxTokensCap > 0 {
				n, err := strconv.Atoi(string(body[m.start:m.end]))
				if err == nil && n > v.MaxTokensCap {
					edits = append(edits, span{m.start, m.end, strconv.AppendInt(nil, int64(v.MaxTokensCap), 10)})
				}
			}
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	if hasMsgs && v.EditsSystem() {
		edits = append(edits, systemEdits(body, msgs, v)...)
	}
	end := bytes.LastIndexByte(body, '}')
	if v.Temperature != nil && !seenTemp {
		edits = append(edits, span{end, end, append([]byte(`,"temperature":`), num(*v.Temperature)...)})
	}
	if v.TopP != nil && !seenTopP {
		edits = append(edits, span{end, end, append([]byte(`,"top_p":`), num(*v.TopP)...)})
	}
	slices.SortStableFunc(edits, func(a, b span) int { return a.start - b.start })
	out := make([]byte, 0, len(body)+len(v.System)+len(v.SystemPrefix)+len(v.SystemSuffix)+64)
	pos := 0
	for _, e := range edits {
		out = append(out, body[pos:e.start]...)
		out = append(out, e.with...)
		pos = e.end
	}
	return append(out, body[pos:]...), nil
}

// sysMsg is a system or developer message's place in the body.
type sysMsg struct {
	start, end   int // the message object
	prevEnd      int // the end of the element before it (-1: first)
	cStart, cEnd int // its content value
	parts        bool
}

// systemEdits are the edits of the messages array's system messages.
func systemEdits(body []byte, msgs member, v *Variant) []span {
	var sys []sysMsg
	prevEnd := -1
	elements(body, msgs.start, func(s, e int) {
		var role string
		cs, ce := -1, -1
		members(body[s:e], func(m member) bool {
			// Keys match the way encoding/json matches them (Parse read
			// the request that way): case-insensitively, the last wins.
			switch {
			case strings.EqualFold(m.key, "role"):
				role = ""
				_ = json.Unmarshal(body[s+m.start:s+m.end], &role)
			case strings.EqualFold(m.key, "content"):
				cs, ce = s+m.start, s+m.end
			}
			return true
		})
		if isSystem(role) {
			sys = append(sys, sysMsg{start: s, end: e, prevEnd: prevEnd, cStart: cs, cEnd: ce, parts: cs >= 0 && body[cs] == '['})
		}
		prevEnd = e
	})
	open := skipSpace(body, msgs.start) + 1
	if len(sys) == 0 {
		msg := append([]byte(`{"role":"system","content":`), jsonb.AppendString(nil, v.SystemText())...)
		return []span{{open, open, append(msg, "},"...)}}
	}
	var edits []span
	// setContent replaces a message's content, or adds one where it has none.
	setContent := func(m sysMsg, text string) span {
		if m.cStart < 0 {
			return span{m.end - 1, m.end - 1, append([]byte(`,"content":`), jsonb.AppendString(nil, text)...)}
		}
		return span{m.cStart, m.cEnd, jsonb.AppendString(nil, text)}
	}
	if v.System != "" {
		edits = append(edits, setContent(sys[0], v.System))
		for _, m := range sys[1:] {
			edits = append(edits, span{m.prevEnd, m.end, nil})
		}
		return edits
	}
	first, last := sys[0], sys[len(sys)-1]
	textPart := func(s string) []byte {
		return append(append([]byte(`{"type":"text","text":`), jsonb.AppendString(nil, s)...), '}')
	}
	strEdit := func(m sysMsg, prefix, suffix string) span {
		var s string
		if m.cStart >= 0 {
			_ = json.Unmarshal(body[m.cStart:m.cEnd], &s)
		}
		return setContent(m, prefix+s+suffix)
	}
	if first.start == last.start && !first.parts {
		return []span{strEdit(first, v.SystemPrefix, v.SystemSuffix)}
	}
	empty := func(m sysMsg) bool { return body[skipSpace(body, m.cStart+1)] == ']' }
	prefixed := false
	if p := v.SystemPrefix; p != "" {
		if first.parts {
			at := first.cStart + 1
			with := textPart(p)
			if !empty(first) {
				with = append(with, ',')
			}
			edits = append(edits, span{at, at, with})
			prefixed = true
		} else {
			edits = append(edits, strEdit(first, p, ""))
		}
	}
	if s := v.SystemSuffix; s != "" {
		if last.parts {
			at := bytes.LastIndexByte(body[:last.cEnd], ']')
			with := textPart(s)
			if !empty(last) || (prefixed && first.start == last.start) {
				with = append([]byte{','}, with...)
			}
			edits = append(edits, span{at, at, with})
		} else {
			edits = append(edits, strEdit(last, "", s))
		}
	}
	return edits
}

// elements calls fn with the span of each element of the array at
// body[start] (which must be valid JSON).
func elements(body []byte, start int, fn func(s, e int)) {
	i := skipSpace(body, start)
	if i >= len(body) || body[i] != '[' {
		return
	}
	i++
	for {
		i = skipSpace(body, i)
		if i >= len(body) || body[i] == ']' {
			return
		}
		s := i
		i = skipValue(body, i)
		fn(s, i)
		i = skipSpace(body, i)
		if i < len(body) && body[i] == ',' {
			i++
		}
	}
}
