package retry

import (
	"testing"
	"time"
)

func TestBackoffFullJitterDoublesAndCaps(t *testing.T) {
	base, max := 100*time.Millisecond, time.Second
	for n, ceil := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 3: 400 * time.Millisecond, 5: time.Second, 9: time.Second} {
		if got := Backoff(n, base, max, func() float64 { return 0.999999 }); got > ceil || got < ceil*99/100 {
			t.Errorf("n=%d: top of range %v, want ~%v", n, got, ceil)
		}
		if got := Backoff(n, base, max, func() float64 { return 0 }); got != 0 {
			t.Errorf("n=%d: bottom of range %v, want 0 (full jitter)", n, got)
		}
	}
}

func TestBudgetAllowsTenPercentWithFloorOverRollingMinute(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b := NewBudget()
	b.Now = func() time.Time { return now }
	for i := 0; i < 200; i++ {
		b.Request("p")
	}
	allowed := 0
	for i := 0; i < 100; i++ {
		if b.Retry("p", 0.1, 5) {
			allowed++
		}
	}
	if allowed != 20 {
		t.Fatalf("allowed %d retries for 200 requests, want 20", allowed)
	}
	if !b.Retry("q", 0.1, 5) {
		t.Fatal("floor does not apply to a quiet provider")
	}
	now = now.Add(61 * time.Second)
	b.Request("p")
	n := 0
	for b.Retry("p", 0.1, 5) {
		n++
	}
	if n != 5 {
		t.Fatalf("after a minute the window should be fresh (floor 5), got %d", n)
	}
}
