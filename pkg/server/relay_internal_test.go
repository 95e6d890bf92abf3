package server

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// deadlineRecorder is a ResponseWriter with write deadlines (as net/http's)
// that records every deadline set.
type deadlineRecorder struct {
	*httptest.ResponseRecorder
	set []time.Time
}

func (d *deadlineRecorder) SetWriteDeadline(t time.Time) error {
	d.set = append(d.set, t)
	return nil
}

var _ http.ResponseWriter = (*deadlineRecorder)(nil)

// TestWriteDeadlineMovesOnlyWhenStale: a fast stream's frames do not each
// move the write deadline (a runtime timer update per frame), yet every
// write has at least 15/16 of the timeout ahead of it.
func TestWriteDeadlineMovesOnlyWhenStale(t *testing.T) {
	const timeout = 160 * time.Millisecond
	d := &deadlineRecorder{ResponseRecorder: httptest.NewRecorder()}
	cw := newClientWriter(d, timeout)
	for i := 0; i < 100; i++ {
		if err := cw.write([]byte("data: x\n\n")); err != nil {
			t.Fatal(err)
		}
	}
	if len(d.set) != 1 {
		t.Fatalf("%d deadlines set for 100 back-to-back writes, want 1", len(d.set))
	}
	time.Sleep(timeout/16 + 5*time.Millisecond)
	before := time.Now()
	cw.write([]byte("data: y\n\n"))
	if len(d.set) != 2 || d.set[1].Sub(before) < timeout*15/16 {
		t.Fatalf("after timeout/16 the deadline must move to a full timeout ahead: %v", d.set)
	}
}
