package sse

import "bytes"

// ParseFrame reads one serialized frame back ("event: x\ndata: ...\n\n", as
// an upstream sent it and a relay passes it on): its event type and its
// data lines joined by "\n". A frame with a single data line is read
// without copying (the slices point into b); comments and other fields are
// ignored.
func ParseFrame(b []byte) Frame {
	var f Frame
	lines := 0
	for len(b) > 0 {
		line, rest, _ := bytes.Cut(b, []byte{'\n'})
		b = rest
		line = bytes.TrimSuffix(line, []byte{'\r'})
		name, value, _ := bytes.Cut(line, []byte{':'})
		value = bytes.TrimPrefix(value, []byte{' '})
		switch string(name) {
		case "event":
			f.Event = value
		case "data":
			if lines++; lines == 1 {
				f.Data = value
			} else {
				f.Data = append(append(append([]byte(nil), f.Data...), '\n'), value...)
			}
		}
	}
	return f
}
