package provider_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/provider"
)

// tooLarge reports whether err is the body bound's error.
func tooLarge(err error) bool {
	var ge *gwerr.Error
	return errors.As(err, &ge) && ge.Code == provider.CodeUpstreamBodyTooLarge && ge.Category == gwerr.Unavailable
}

// closeCount is a body that counts its Close calls.
type closeCount struct {
	io.Reader
	closed int
}

func (c *closeCount) Close() error { c.closed++; return nil }

// A body of exactly the bound is read whole; one byte more is the bound's
// error (unavailable, upstream_body_too_large), with no more than the
// bound handed on, and the body is closed so the upstream stops.
func TestLimitBodyPassesTheBoundAndFailsPastIt(t *testing.T) {
	for _, tc := range []struct {
		n    int
		fail bool
	}{{0, false}, {99, false}, {100, false}, {101, true}, {1 << 20, true}} {
		body := &closeCount{Reader: strings.NewReader(strings.Repeat("x", tc.n))}
		got, err := io.ReadAll(provider.LimitBody("p", body, 100))
		switch {
		case tc.fail && (!tooLarge(err) || len(got) > 100 || body.closed == 0):
			t.Errorf("%d bytes: read %d, err %v, closed %d: want the bound's error after at most 100 bytes, the body closed", tc.n, len(got), err, body.closed)
		case !tc.fail && (err != nil || len(got) != tc.n):
			t.Errorf("%d bytes: read %d, err %v: want all of it", tc.n, len(got), err)
		}
	}
	one := iotest.OneByteReader(strings.NewReader(strings.Repeat("y", 101)))
	if _, err := io.ReadAll(provider.LimitBody("p", io.NopCloser(one), 100)); !tooLarge(err) {
		t.Errorf("read a byte at a time: err %v, want the bound's error", err)
	}
}

// frame is an event-stream frame's bytes: its total length, then filler.
func frame(total int) []byte {
	b := make([]byte, total)
	binary.BigEndian.PutUint32(b, uint32(total))
	for i := 4; i < total; i++ {
		b[i] = 0xff // filler that would read as a huge length if misaligned
	}
	return b
}

// LimitFrames follows frame boundaries across reads of any size and passes
// every byte on unchanged; the first frame declaring more than the bound
// is refused before its body is read.
func TestLimitFramesBoundsEachFrame(t *testing.T) {
	var ok bytes.Buffer
	for _, n := range []int{16, 100, 64, 100} {
		ok.Write(frame(n))
	}
	for _, one := range []bool{false, true} {
		var r io.Reader = bytes.NewReader(ok.Bytes())
		if one {
			r = iotest.OneByteReader(r)
		}
		got, err := io.ReadAll(provider.LimitFrames("p", io.NopCloser(r), 100))
		if err != nil || !bytes.Equal(got, ok.Bytes()) {
			t.Errorf("one byte at a time %v: err %v, %d of %d bytes passed", one, err, len(got), ok.Len())
		}
	}
	bad := append(append([]byte(nil), ok.Bytes()...), frame(101)...)
	body := &closeCount{Reader: iotest.OneByteReader(bytes.NewReader(bad))}
	got, err := io.ReadAll(provider.LimitFrames("p", body, 100))
	if !tooLarge(err) || len(got) > ok.Len()+4 || body.closed == 0 {
		t.Errorf("a 101-byte frame under a 100-byte bound: err %v after %d bytes (closed %d), want the bound's error at its prelude", err, len(got), body.closed)
	}
}
