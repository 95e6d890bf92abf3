package jsonb

import "iter"

// Elements yields each element of the JSON array arr as its raw text (a
// sub-slice of arr, not a copy), in order: what json.Unmarshal into a
// []json.RawMessage gives, without its validity scan and its copies. Like
// Members it is for text validated already: it stops at the first thing
// that is not well-formed, and yields nothing when arr is not an array.
func Elements(arr []byte) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		s := String(arr)
		i := skipSpace(s, 0)
		if i >= len(s) || s[i] != '[' {
			return
		}
		i = skipSpace(s, i+1)
		if i < len(s) && s[i] == ']' {
			return
		}
		for {
			end := skipValue(s, i)
			if end <= i || !yield(arr[i:end:end]) {
				return
			}
			i = skipSpace(s, end)
			if i >= len(s) || s[i] != ',' {
				return
			}
			i = skipSpace(s, i+1)
		}
	}
}
