// Package jsonb holds the byte-level helpers every wire package shares when
// it reads JSON without decoding it.
package jsonb

import (
	"reflect"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/tidwall/gjson"
)

// String views b as a string without copying, for read-only lookups
// (gjson paths, comparisons). The string must not outlive b's contents.
func String(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

const hexDigits = "0123456789abcdef"

// AppendString appends s to dst as a JSON string literal, quotes
// included. It is not Go quoting (strconv.AppendQuote writes \x escapes and
// Go-only forms that JSON does not allow): '"' and '\\' are backslashed,
// control characters below U+0020 become \b \f \n \r \t or \u00XX, U+2028
// and U+2029 become \u2028 and \u2029 (JavaScript line terminators), and
// each byte of invalid UTF-8 becomes \ufffd. '<', '>' and '&' are kept as
// they are (valid JSON; OpenAI does not HTML-escape either). The output is
// byte for byte what encoding/json writes with SetEscapeHTML(false).
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// Chars counts the characters (Unicode code points) of the text a JSON
// string literal holds, without decoding it: raw is the literal with its
// quotes (gjson.Result.Raw). An escape counts as the one character it
// stands for (a \uD83D\uDE00 surrogate pair as one). raw that is not a
// string literal counts 0. It does not allocate.
func Chars(raw string) int {
	if len(raw) < 2 || raw[0] != '"' {
		return 0
	}
	s := raw[1 : len(raw)-1]
	n := 0
	for i := 0; i < len(s); {
		switch c := s[i]; {
		case c == '\\':
			if i+1 < len(s) && s[i+1] == 'u' {
				// A high surrogate followed by its low half is one character.
				if i+12 <= len(s) && highSurrogate(s[i+2:i+4]) && s[i+6] == '\\' && s[i+7] == 'u' {
					i += 12
					n++
					continue
				}
				i += 6
			} else {
				i += 2
			}
			n++
		case c < utf8.RuneSelf:
			i++
			n++
		default:
			_, w := utf8.DecodeRuneInString(s[i:])
			i += w
			n++
		}
	}
	return n
}

// highSurrogate reports whether the first two hex digits of a \u escape
// (d8..db) start a UTF-16 high surrogate.
func highSurrogate(h string) bool {
	return (h[0] == 'd' || h[0] == 'D') && (h[1] >= '8' && h[1] <= '9' || h[1] >= 'a' && h[1] <= 'b' || h[1] >= 'A' && h[1] <= 'B')
}

// Members calls yield with each member of the JSON object obj (its raw
// text, as gjson.Result.Raw gives it) in order: the key as written (an
// escaped key is passed escaped) and the value's raw text. It stops when
// yield returns false or at the first thing that is not well-formed
// (callers read text that was validated already). Unlike gjson's ForEach,
// it never decodes a string, so it does not allocate.
func Members(obj string, yield func(key, value string) bool) {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return
	}
	i++
	for {
		i = skipSpace(obj, i)
		if i >= len(obj) || obj[i] != '"' {
			return
		}
		end := skipValue(obj, i)
		key := obj[i+1 : max(i+1, end-1)]
		i = skipSpace(obj, end)
		if i >= len(obj) || obj[i] != ':' {
			return
		}
		i = skipSpace(obj, i+1)
		end = skipValue(obj, i)
		if end <= i || !yield(key, obj[i:end]) {
			return
		}
		i = skipSpace(obj, end)
		if i >= len(obj) || obj[i] != ',' {
			return
		}
		i++
	}
}

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the end of the JSON value starting at s[i].
func skipValue(s string, i int) int {
	if i >= len(s) {
		return i
	}
	switch s[i] {
	case '"':
		for j := i + 1; j < len(s); j++ {
			switch s[j] {
			case '\\':
				j++
			case '"':
				return j + 1
			}
		}
		return len(s)
	case '{', '[':
		depth := 0
		for j := i; j < len(s); j++ {
			switch s[j] {
			case '"':
				j = skipValue(s, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return len(s)
	}
	j := i
	for j < len(s) && s[j] != ',' && s[j] != '}' && s[j] != ']' && s[j] != ' ' && s[j] != '\n' && s[j] != '\t' && s[j] != '\r' {
		j++
	}
	return j
}

// FieldNames returns the JSON names of a struct type's fields (the part of
// each json tag before the first comma), for validators that tell a known
// member from an unknown or case-variant one. v is a value of the type.
func FieldNames(v any) map[string]bool {
	m := map[string]bool{}
	t := reflect.TypeOf(v)
	for i := 0; i < t.NumField(); i++ {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			m[name] = true
		}
	}
	return m
}

// Depth returns the deepest nesting of objects and arrays in a valid JSON
// document (0 for a scalar), so request readers can bound it.
func Depth(b []byte) int {
	d, deepest := 0, 0
	inString, escaped := false, false
	for _, c := range b {
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			d++
			deepest = max(deepest, d)
		case '}', ']':
			d--
		}
	}
	return deepest
}

// Int is the integer a raw JSON value holds, as gjson's Int reads it
// (absent, null and anything not a number are 0). A plain run of digits,
// what every provider sends for a count or an index, is read without a
// float parser: the readers of stream events run deep in every stream's
// stack, where strconv's float parser alone would double it.
func Int(raw string) int64 {
	if raw == "" {
		return 0
	}
	var n int64
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c < '0' || c > '9' || i >= 18 {
			return gjson.Parse(raw).Int()
		}
		n = n*10 + int64(c-'0')
	}
	return n
}
