package rechunk

import (
	"bytes"
	"net"
	"strconv"
	"sync"
)

// Limits of what the connection parses; beyond them it passes bytes
// through (net/http has its own, smaller limits and reports the error).
const (
	maxHeader = 1 << 20 // a response's header block
	maxLine   = 4096    // a chunk-size or trailer line
	// outSize is the initial size of a pooled output buffer: the read
	// size of net/http's connection reader plus room for chunk headers.
	outSize = 4<<10 + 64
	// maxPooled is the largest output buffer put back in the pool.
	maxPooled = 64 << 10
)

// outPool holds output buffers between reads: a connection needs one only
// while it has processed bytes to hand over, not while it waits (a held
// stream waits most of the time).
var outPool = sync.Pool{New: func() any { b := make([]byte, 0, outSize); return &b }}

// state is where the connection is in the response stream.
type state uint8

const (
	sHeader  state = iota // in a response's header block
	sFixed                // in a Content-Length body
	sSize                 // at a chunk-size line
	sData                 // in a chunk's data
	sDataEnd              // at the CRLF after a chunk's data
	sTrailer              // in the trailer after the last chunk
	sRaw                  // passing everything through
)

// Conn is a client connection that re-frames chunked response bodies so
// that every read from the network ends at a chunk boundary (see the
// package comment). Writes pass through.
type Conn struct {
	net.Conn

	in   []byte  // bytes read, not yet processed (within the caller's buffer, during a Read)
	pbuf *[]byte // the pooled output buffer, while one is held
	obuf []byte  // processed bytes (in *pbuf)
	out  []byte  // processed bytes not yet returned (within obuf)
	err  error   // the read error, returned once everything before it is

	st   state
	left uint64 // bytes left in the chunk (sData) or the body (sFixed)
	hdr  []byte // the header block so far (sHeader)
	line []byte // a partial line (sSize, sTrailer) or CRLF (sDataEnd)
}

// NewConn wraps c.
func NewConn(c net.Conn) *Conn {
	return &Conn{Conn: c}
}

// Read implements io.Reader: the response stream, re-framed, as soon as
// it arrives. The network read goes straight into p (the transport's own
// buffer), so a connection waiting for its upstream holds no buffer of its
// own; the re-framed bytes are built in a pooled buffer and copied back.
func (c *Conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		if len(c.out) > 0 {
			n := copy(p, c.out)
			c.out = c.out[n:]
			if len(c.out) == 0 {
				c.release() // process consumed all of c.in
			}
			return n, nil
		}
		if c.err != nil {
			return 0, c.err
		}
		if c.st == sRaw {
			return c.Conn.Read(p) // nothing to re-frame: no copy
		}
		n, err := c.Conn.Read(p)
		c.err = err
		if n == 0 {
			continue
		}
		if c.pbuf == nil {
			c.pbuf = outPool.Get().(*[]byte)
		}
		// process consumes all of c.in (which aliases p) into obuf before
		// anything is copied back into p.
		c.in, c.obuf = p[:n], (*c.pbuf)[:0]
		c.process()
		c.in, c.out = nil, c.obuf
		if len(c.out) == 0 {
			c.release()
		}
	}
}

// release puts the output buffer back in the pool once everything in it
// has been handed over.
func (c *Conn) release() {
	if c.pbuf == nil {
		return
	}
	if cap(c.obuf) <= maxPooled {
		*c.pbuf = c.obuf[:0]
		outPool.Put(c.pbuf)
	}
	c.pbuf, c.obuf, c.out = nil, nil, nil
}

// emit appends processed bytes.
func (c *Conn) emit(b []byte) { c.obuf = append(c.obuf, b...) }

// giveUp passes held bytes and everything after them through as they are.
func (c *Conn) giveUp(held []byte) {
	c.emit(held)
	c.emit(c.in)
	c.in = nil
	c.st = sRaw
}

// process consumes c.in.
func (c *Conn) process() {
	for len(c.in) > 0 {
		switch c.st {
		case sRaw:
			c.emit(c.in)
			c.in = nil
		case sHeader:
			c.header()
		case sFixed:
			k := min(c.left, uint64(len(c.in)))
			c.emit(c.in[:k])
			c.in, c.left = c.in[k:], c.left-k
			if c.left == 0 {
				c.st = sHeader
			}
		case sSize:
			line, ok := c.takeLine()
			if !ok {
				continue
			}
			size, ok := chunkSize(line)
			switch {
			case !ok:
				c.giveUp(line)
			case size == 0:
				c.emit(line) // the last chunk, as sent
				c.st = sTrailer
			default:
				c.left, c.st = size, sData
			}
		case sData:
			k := min(c.left, uint64(len(c.in)))
			c.obuf = strconv.AppendUint(c.obuf, k, 16)
			c.obuf = append(c.obuf, '\r', '\n')
			c.emit(c.in[:k])
			c.obuf = append(c.obuf, '\r', '\n')
			c.in, c.left = c.in[k:], c.left-k
			if c.left == 0 {
				c.st, c.line = sDataEnd, c.line[:0]
			}
		case sDataEnd:
			k := min(2-len(c.line), len(c.in))
			c.line = append(c.line, c.in[:k]...)
			c.in = c.in[k:]
			if len(c.line) < 2 {
				continue
			}
			if string(c.line) != "\r\n" {
				c.giveUp(c.line) // net/http sees the chunk end malformed
				continue
			}
			c.st, c.line = sSize, c.line[:0]
		case sTrailer:
			line, ok := c.takeLine()
			if !ok {
				continue
			}
			c.emit(line)
			if len(bytes.TrimRight(line, "\r\n")) == 0 {
				c.st = sHeader
			}
		}
	}
}

// takeLine returns a whole line (with its line end) once it is in, keeping
// a partial one in c.line. A line too long gives up.
func (c *Conn) takeLine() ([]byte, bool) {
	i := bytes.IndexByte(c.in, '\n')
	if i < 0 {
		c.line = append(c.line, c.in...)
		c.in = nil
		if len(c.line) > maxLine {
			c.giveUp(c.line)
		}
		return nil, false
	}
	var line []byte
	if len(c.line) == 0 {
		line = c.in[:i+1]
	} else {
		c.line = append(c.line, c.in[:i+1]...)
		line = c.line
	}
	c.in = c.in[i+1:]
	c.line = c.line[:0]
	return line, true
}

// header passes a header block through and, at its end, decides how the
// body is framed.
func (c *Conn) header() {
	held := len(c.hdr)
	c.hdr = append(c.hdr, c.in...)
	end := blankLine(c.hdr[max(held-2, 0):])
	if end < 0 {
		c.emit(c.in)
		c.in = nil
		if len(c.hdr) > maxHeader {
			c.st = sRaw
		}
		return
	}
	end += max(held-2, 0)
	used := end - held
	c.emit(c.in[:used])
	c.in = c.in[used:]
	c.st, c.left = bodyState(c.hdr[:end])
	c.hdr = c.hdr[:0]
}

// blankLine returns the index just past the first empty line ("\n\n" or
// "\n\r\n": net/http tolerates bare line feeds) in b, or -1.
func blankLine(b []byte) int {
	for i := 0; i < len(b); i++ {
		if b[i] != '\n' {
			continue
		}
		if i+1 < len(b) && b[i+1] == '\n' {
			return i + 2
		}
		if i+2 < len(b) && b[i+1] == '\r' && b[i+2] == '\n' {
			return i + 3
		}
	}
	return -1
}

// bodyState reads a response's header block: how its body is framed.
func bodyState(h []byte) (state, uint64) {
	line, rest, _ := bytes.Cut(h, []byte("\n"))
	line = bytes.TrimRight(line, "\r")
	if !bytes.HasPrefix(line, []byte("HTTP/1.")) || len(line) < 12 {
		return sRaw, 0
	}
	code, err := strconv.Atoi(string(line[9:12]))
	switch {
	case err != nil || code == http101:
		return sRaw, 0
	case code < 200, code == 204, code == 304:
		return sHeader, 0 // no body; an interim response is followed by the final one
	}
	chunked, length, hasLength := false, uint64(0), false
	for len(rest) > 0 {
		var l []byte
		l, rest, _ = bytes.Cut(rest, []byte("\n"))
		name, value, ok := bytes.Cut(bytes.TrimRight(l, "\r"), []byte(":"))
		if !ok {
			continue
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			codings := bytes.Split(value, []byte(","))
			chunked = bytes.EqualFold(bytes.TrimSpace(codings[len(codings)-1]), []byte("chunked"))
			if !chunked {
				return sRaw, 0 // read until close
			}
		case bytes.EqualFold(name, []byte("Content-Length")):
			n, err := strconv.ParseUint(string(value), 10, 63)
			if err != nil || hasLength && n != length {
				return sRaw, 0
			}
			length, hasLength = n, true
		}
	}
	switch {
	case chunked:
		return sSize, 0
	case hasLength && length == 0:
		return sHeader, 0
	case hasLength:
		return sFixed, length
	}
	return sRaw, 0 // read until close
}

const http101 = 101

// chunkSize parses a chunk-size line ("1a;ext=v\r\n").
func chunkSize(line []byte) (uint64, bool) {
	line = bytes.TrimRight(line, "\r\n")
	if i := bytes.IndexByte(line, ';'); i >= 0 {
		line = line[:i]
	}
	line = bytes.TrimRight(line, " \t")
	if len(line) == 0 || len(line) > 16 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(line), 16, 64)
	return n, err == nil
}
