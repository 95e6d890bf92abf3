package bedrock

import (
	"strconv"
	"unicode/utf8"
)

// This file is the translator's only JSON writer: a few append-based
// helpers. They stand in for the shared builder in pkg/openaiwire/build.go;
// when it lands, these functions become thin calls into it (or disappear),
// and nothing else in the package changes.

const hexDigits = "0123456789abcdef"

// safeASCII reports the bytes below utf8.RuneSelf that need no escaping in
// a JSON string.
var safeASCII = func() (t [utf8.RuneSelf]bool) {
	for i := 0x20; i < utf8.RuneSelf; i++ {
		t[i] = i != '"' && i != '\\'
	}
	return t
}()

// appendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD;
// U+2028 and U+2029 are escaped so the output is safe inside JavaScript.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if safeASCII[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
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

// appendInt appends n in decimal.
func appendInt(dst []byte, n int64) []byte { return strconv.AppendInt(dst, n, 10) }

// appendUsage appends an OpenAI usage object: prompt_tokens includes the
// cached prompt tokens, as OpenAI counts them, and prompt_tokens_details
// appears only when a cache was read or written.
func appendUsage(dst []byte, prompt, completion, cacheRead, cacheWrite int) []byte {
	dst = append(dst, `{"prompt_tokens":`...)
	dst = appendInt(dst, int64(prompt))
	dst = append(dst, `,"completion_tokens":`...)
	dst = appendInt(dst, int64(completion))
	dst = append(dst, `,"total_tokens":`...)
	dst = appendInt(dst, int64(prompt+completion))
	if cacheRead > 0 || cacheWrite > 0 {
		dst = append(dst, `,"prompt_tokens_details":{"cached_tokens":`...)
		dst = appendInt(dst, int64(cacheRead))
		if cacheWrite > 0 {
			dst = append(dst, `,"cache_creation_tokens":`...)
			dst = appendInt(dst, int64(cacheWrite))
		}
		dst = append(dst, '}')
	}
	return append(dst, '}')
}
