package server

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// readAll returns the whole body whatever the announced size says (exact,
// too small, too large, unknown), in any read sizes, passes a read error
// on, and allocates once when the size is right.
func TestReadAll(t *testing.T) {
	body := strings.Repeat("x", 10<<10)
	for _, size := range []int64{int64(len(body)), 10, int64(len(body)) * 2, 0, -1} {
		for _, one := range []bool{false, true} {
			var r io.Reader = strings.NewReader(body)
			if one {
				r = iotest.OneByteReader(r)
			}
			got, err := readAll(r, size)
			if err != nil || string(got) != body {
				t.Errorf("size %d oneByte %v: %d bytes, %v", size, one, len(got), err)
			}
		}
	}
	boom := errors.New("boom")
	if _, err := readAll(io.MultiReader(strings.NewReader("ab"), iotest.ErrReader(boom)), 10); !errors.Is(err, boom) {
		t.Errorf("err = %v", err)
	}
	b := []byte(body)
	r := bytes.NewReader(b)
	if n := testing.AllocsPerRun(10, func() { r.Reset(b); readAll(r, int64(len(b))) }); n != 1 {
		t.Errorf("%v allocations for a body of the announced size, want 1", n)
	}
}
