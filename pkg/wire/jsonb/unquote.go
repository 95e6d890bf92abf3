package jsonb

import (
	"encoding/binary"
	"encoding/json"
	"unicode/utf8"
)

// Unquote decodes raw, one JSON value, into a string exactly as
// json.Unmarshal(raw, &s) does, and reports whether that would succeed (a
// string literal or null; anything else is a type or syntax error). It is
// for the canonical-prompt builders, which decode message text out of a
// body that was validated already: json.Unmarshal scans the value twice
// (its validity check, then the decode) before it copies it, where a
// literal without escapes is one check and one copy here. A literal with
// an escape, null, and anything unusual (leading space, a control
// character, invalid UTF-8) take json.Unmarshal itself, so the result is
// always the one it gives.
func Unquote(raw []byte) (string, bool) {
	if len(raw) == 0 {
		return "", false
	}
	switch c := raw[0]; {
	case c == '[' || c == '{' || c == 't' || c == 'f' || c == '-' || c >= '0' && c <= '9':
		// Not a string: json.Unmarshal into a string fails (a type
		// error, or a syntax error), whatever follows.
		return "", false
	case c == '"' && len(raw) >= 2 && raw[len(raw)-1] == '"':
		if body := raw[1 : len(raw)-1]; plainText(body) {
			return string(body), true
		}
	}
	return unmarshalString(raw)
}

// unmarshalString is json.Unmarshal into a string (its own function, so
// that only this path pays for the string escaping to the heap).
func unmarshalString(raw []byte) (string, bool) {
	var s string
	ok := json.Unmarshal(raw, &s) == nil
	return s, ok
}

// plainText reports whether b is the inside of a JSON string literal that
// needs no decoding: no quote, backslash or control character, and valid
// UTF-8 (json.Unmarshal would replace invalid bytes with U+FFFD). It reads
// eight bytes at a time.
func plainText(b []byte) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	var high uint64
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		high |= x
		q, bs := x^(ones*'"'), x^(ones*'\\')
		// A byte below 0x20, or a zero byte of q or bs (a quote or a
		// backslash): the bit tricks of "Bit Twiddling Hacks" (hasless).
		if ((x-ones*0x20)&^x|(q-ones)&^q|(bs-ones)&^bs)&highs != 0 {
			return false
		}
	}
	for ; i < len(b); i++ {
		c := b[i]
		if c < 0x20 || c == '"' || c == '\\' {
			return false
		}
		high |= uint64(c)
	}
	return high&highs == 0 || utf8.Valid(b)
}
