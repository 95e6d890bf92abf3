package jsonb

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/llmgw/llmgw/pkg/gwerr"
)

// CheckKeys is the one decision every request validator shares on object
// keys: it refuses a document in which any object, at any depth, holds two
// members whose keys are the same (a duplicate) or differ only in case
// (under Unicode simple folding, the way encoding/json matches a key to a
// struct field: "ſtream" folds to "stream", "\u0043ontent" is "Content").
//
// Why: the gateway decodes requests with encoding/json, which matches keys
// case-insensitively and keeps the last duplicate, while gjson (the
// gateway's raw reads) keeps the first and providers' parsers are
// case-sensitive. {"content": "<phrase>", "Content": "hello"} would be
// moderated and estimated as "hello" and reach the model as "<phrase>".
// Refusing the document is the only reading every party agrees on.
//
// The refusal is an invalid_request *gwerr.Error whose Param is the path of
// the second key (messages[0].Content). b must be valid JSON that the
// caller's depth limit already accepted; keys are compared decoded (an
// escaped key is unescaped first). Past its small per-depth key buffers it
// allocates only for escaped keys and objects of more than 16 members
// (about 2 GB/s on a chat body).
func CheckKeys(b []byte) error {
	var c keyChecker
	_, err := c.value(b, skipSpaceB(b, 0), 0)
	if err == nil {
		return nil
	}
	var p strings.Builder
	for i := len(err.path) - 1; i >= 0; i-- {
		s := err.path[i]
		if s[0] != '[' && p.Len() > 0 {
			p.WriteByte('.')
		}
		p.WriteString(s)
	}
	param := Truncate(p.String(), 200)
	if err.dup {
		return gwerr.New(gwerr.InvalidRequest, "field %q appears more than once in the same object", param).WithParam(param)
	}
	return gwerr.New(gwerr.InvalidRequest, "field %q differs only in case from %q in the same object; field names are case-sensitive and each may appear once",
		param, Truncate(err.other, 100)).WithParam(param)
}

// Truncate returns s cut to at most max bytes on a character boundary with
// "..." appended when it was longer, for echoing client-supplied text in an
// error message without echoing all of it.
func Truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	i := max
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "..."
}

// maxCheckDepth stops descending past this many levels; validators refuse
// far shallower documents before calling CheckKeys.
const maxCheckDepth = 1024

// keyError is a refused key; path holds the segments innermost first.
type keyError struct {
	path  []string
	other string
	dup   bool
}

type keyChecker struct {
	// keys is a stack of per-depth key buffers, reused across objects.
	keys [][]string
}

func (c *keyChecker) value(b []byte, i, depth int) (int, *keyError) {
	if i >= len(b) {
		return i, nil
	}
	switch b[i] {
	case '{':
		return c.object(b, i, depth)
	case '[':
		i++
		for n := 0; ; n++ {
			i = skipSpaceB(b, i)
			if i >= len(b) || b[i] == ']' {
				return i + 1, nil
			}
			var err *keyError
			if i, err = c.value(b, i, depth+1); err != nil {
				err.path = append(err.path, "["+strconv.Itoa(n)+"]")
				return i, err
			}
			if i = skipSpaceB(b, i); i < len(b) && b[i] == ',' {
				i++
			}
		}
	case '"':
		return strEnd(b, i+1), nil
	}
	for i < len(b) {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return i, nil
		}
		i++
	}
	return i, nil
}

func (c *keyChecker) object(b []byte, i, depth int) (int, *keyError) {
	if depth >= maxCheckDepth {
		return len(b), nil
	}
	for len(c.keys) <= depth {
		c.keys = append(c.keys, nil)
	}
	keys := c.keys[depth][:0]
	var folded map[string]string // fold key -> key, past 16 members
	i++
	for {
		i = skipSpaceB(b, i)
		if i >= len(b) || b[i] != '"' {
			c.keys[depth] = keys
			return i + 1, nil
		}
		end := strEnd(b, i+1)
		key := String(b[i+1 : max(i+1, end-1)])
		if strings.IndexByte(key, '\\') >= 0 {
			var s string
			_ = json.Unmarshal(b[i:end], &s)
			key = s
		}
		if other, dup, ok := clash(keys, &folded, key); ok {
			c.keys[depth] = keys
			return end, &keyError{path: []string{key}, other: other, dup: dup}
		}
		keys = append(keys, key)
		i = skipSpaceB(b, end)
		if i < len(b) && b[i] == ':' {
			i++
		}
		var err *keyError
		if i, err = c.value(b, skipSpaceB(b, i), depth+1); err != nil {
			err.path = append(err.path, key)
			return i, err
		}
		if i = skipSpaceB(b, i); i < len(b) && b[i] == ',' {
			i++
		}
	}
}

// clash reports the earlier key that key repeats or case-folds to.
func clash(keys []string, folded *map[string]string, key string) (other string, dup, ok bool) {
	if len(keys) < 16 {
		for _, k := range keys {
			if len(k) == len(key) && k == key {
				return k, true, true
			}
			if strings.EqualFold(k, key) {
				return k, false, true
			}
		}
		return "", false, false
	}
	if *folded == nil {
		*folded = make(map[string]string, 2*len(keys))
		for _, k := range keys {
			(*folded)[foldKey(k)] = k
		}
	}
	f := foldKey(key)
	if k, seen := (*folded)[f]; seen {
		return k, k == key, true
	}
	(*folded)[f] = key
	return "", false, false
}

// foldKey maps s to one representative of its case-folding class: two
// strings have the same foldKey exactly when strings.EqualFold holds.
func foldKey(s string) string {
	var sb strings.Builder
	sb.Grow(len(s))
	for _, r := range s {
		min := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if f < min {
				min = f
			}
		}
		sb.WriteRune(min)
	}
	return sb.String()
}

func skipSpaceB(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// strEnd returns the index just past the closing quote of the string whose
// contents start at b[i].
func strEnd(b []byte, i int) int {
	for i < len(b) {
		q := bytes.IndexByte(b[i:], '"')
		if q < 0 {
			return len(b)
		}
		j := i + q
		// Count the backslashes before the quote: an odd run escapes it.
		n := 0
		for k := j - 1; k >= i && b[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return j + 1
		}
		i = j + 1
	}
	return len(b)
}

// HasLoneSurrogate reports whether the JSON text b holds a \u escape of a
// UTF-16 surrogate that is not half of a pair (\ud800 alone, or a low half
// first). Decoders replace each with U+FFFD, so two documents that differ
// only there decode to the same text while an upstream may read them
// differently: whatever is keyed on decoded text (the response cache)
// must not treat them as one. b must be valid JSON (a backslash only
// occurs inside strings).
func HasLoneSurrogate(b []byte) bool {
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' {
			continue
		}
		if i+1 < len(b) && b[i+1] != 'u' {
			i++ // an escape of one character (\\ included)
			continue
		}
		r, ok := hex4(b, i+2)
		i += 5
		switch {
		case !ok:
		case r >= 0xDC00 && r <= 0xDFFF:
			return true // a low half with no high half before it
		case r >= 0xD800 && r <= 0xDBFF:
			if i+2 >= len(b) || b[i+1] != '\\' || b[i+2] != 'u' {
				return true
			}
			lo, ok := hex4(b, i+3)
			if !ok || lo < 0xDC00 || lo > 0xDFFF {
				return true
			}
			i += 6
		}
	}
	return false
}

// hex4 reads the four hex digits at b[i:].
func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
