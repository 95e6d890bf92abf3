package pacing

import (
	"sync"
	"time"
	"unicode/utf8"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/stage"
)

// stream is a paced stage.Source. A reader goroutine moves the wrapped
// source's events into a bounded queue; Next (the relay's goroutine) takes
// them out under a token bucket: text costs one token per character, other
// events nothing. Text and Reasoning events larger than the tokens at hand
// are split at a character boundary; raw frames are released whole (their
// weight may put the bucket in debt, which keeps the average rate).
type stream struct {
	src  stage.Source
	prof Profile
	opt  stage.PaceOptions
	now  func() time.Time

	mu       sync.Mutex
	q        []queued
	qBytes   int
	qChars   int       // characters still held
	finished bool      // the source ended; err is its last error
	err      error     // io.EOF, or the mid-stream error
	endAt    time.Time // when the source ended

	done   chan struct{} // the reader exited
	ended  chan struct{} // the source ended (closed once)
	notify chan struct{} // the queue changed (cap 1)
	space  chan struct{} // room was freed (cap 1)
	stop   chan struct{} // End was called

	// Writer side only.
	tokens float64
	last   time.Time
	timer  *time.Timer
	after  func(time.Duration) <-chan time.Time // the clock's timer; nil: timer
}

// queued is one held event and its cost.
type queued struct {
	ev    exchange.Event
	chars int  // its weight in characters
	split bool // Text or Reasoning: may be released in pieces
	size  int  // bytes counted against MaxBuffer
}

// eventOverhead is what one held event costs beyond its text and bytes.
const eventOverhead = 160

func newStream(src stage.Source, prof Profile, o stage.PaceOptions, now func() time.Time) *stream {
	s := &stream{src: src, prof: prof, opt: o, now: now,
		done: make(chan struct{}), ended: make(chan struct{}), notify: make(chan struct{}, 1),
		space: make(chan struct{}, 1), stop: make(chan struct{}), timer: time.NewTimer(time.Hour)}
	s.timer.Stop()
	go s.read()
	return s
}

// read moves the source's events into the queue, waiting while it is full
// (so the upstream is read no faster than the client is served).
func (s *stream) read() {
	defer close(s.done)
	for {
		ev, err := s.src.Next()
		if err != nil {
			s.mu.Lock()
			s.finished, s.err, s.endAt = true, err, s.now()
			s.mu.Unlock()
			close(s.ended)
			signal(s.notify)
			return
		}
		q := s.weigh(ev.Clone())
		s.mu.Lock()
		for s.qBytes+q.size > MaxBuffer && len(s.q) > 0 {
			s.mu.Unlock()
			select {
			case <-s.space:
			case <-s.stop:
				return
			}
			s.mu.Lock()
		}
		s.q = append(s.q, q)
		s.qBytes += q.size
		s.qChars += q.chars
		s.mu.Unlock()
		signal(s.notify)
	}
}

func (s *stream) weigh(ev exchange.Event) queued {
	q := queued{ev: ev, size: eventOverhead + len(ev.Text) + len(ev.Raw)}
	switch ev.Kind {
	case exchange.Text, exchange.Reasoning:
		q.chars, q.split = utf8.RuneCountInString(ev.Text), true
	case exchange.Raw:
		if s.opt.Weigh != nil {
			if n, ok := s.opt.Weigh(&ev); ok {
				q.chars = n
				break
			}
		}
		if ev.Flags&exchange.HasContent != 0 {
			q.chars = rawFrameChars
		}
	}
	return q
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// Next implements stage.Source: the next event (or piece of text) once the
// profile allows it.
func (s *stream) Next() (exchange.Event, error) {
	for {
		s.mu.Lock()
		if len(s.q) == 0 {
			if s.finished {
				err := s.err
				s.mu.Unlock()
				return exchange.Event{}, err
			}
			s.mu.Unlock()
			<-s.notify
			continue
		}
		head := &s.q[0]
		if head.chars == 0 {
			return s.pop(), nil
		}
		now := s.now()
		rate, flush := s.prof.CharsPerSecond, false
		if s.finished {
			// Out within EndBound of the source's end, whatever the rate.
			left := s.endAt.Add(EndBound).Sub(now)
			if left <= 0 {
				flush = true
			} else if r := float64(s.qChars) / left.Seconds(); r > rate {
				rate = r
			}
		}
		burst := max(s.prof.Burst, rate/20) // at most 50 ms of output at once
		if s.last.IsZero() {
			s.tokens = s.prof.Burst
		} else {
			s.tokens = min(burst, s.tokens+rate*now.Sub(s.last).Seconds())
		}
		s.last = now
		need := min(head.chars, int(burst))
		if head.split {
			// At most about 50 pieces a second, however high the rate.
			need = min(head.chars, max(s.prof.Quantum, int(rate/50)))
		}
		switch {
		case flush:
			return s.pop(), nil
		case s.tokens >= float64(need):
			if head.split && float64(head.chars) > s.tokens {
				return s.splitHead(int(s.tokens)), nil
			}
			s.tokens -= float64(head.chars)
			return s.pop(), nil
		}
		wait := time.Duration((float64(need) - s.tokens) / rate * float64(time.Second))
		if s.finished {
			wait = min(wait, s.endAt.Add(EndBound).Sub(now))
		}
		finished := s.finished
		s.mu.Unlock()
		s.sleep(max(wait, time.Millisecond), finished)
	}
}

// pop removes and returns the head; called with mu held, releases it.
func (s *stream) pop() exchange.Event {
	h := s.q[0]
	s.q[0] = queued{}
	s.q = s.q[1:]
	s.qBytes -= h.size
	s.qChars -= h.chars
	s.mu.Unlock()
	signal(s.space)
	return h.ev
}

// splitHead releases the first n characters of the head's text; called
// with mu held, releases it.
func (s *stream) splitHead(n int) exchange.Event {
	h := &s.q[0]
	cut := 0
	for i := 0; i < n && cut < len(h.ev.Text); i++ {
		_, w := utf8.DecodeRuneInString(h.ev.Text[cut:])
		cut += w
	}
	out := h.ev
	out.Text = h.ev.Text[:cut]
	h.ev.Text = h.ev.Text[cut:]
	h.chars -= n
	h.size -= cut
	s.qChars -= n
	s.qBytes -= cut
	s.tokens -= float64(n)
	s.mu.Unlock()
	signal(s.space)
	return out
}

// sleep waits d, or less when the source ends meanwhile (the end bound may
// raise the rate).
func (s *stream) sleep(d time.Duration, finished bool) {
	ended := s.ended
	if finished {
		ended = nil
	}
	if s.after != nil {
		select {
		case <-s.after(d):
		case <-ended:
		}
		return
	}
	s.timer.Reset(d)
	select {
	case <-s.timer.C:
	case <-ended:
		s.timer.Stop()
	}
}

// Usage implements stage.Source.
func (s *stream) Usage() exchange.TokenUsage { return s.src.Usage() }

// End implements stage.Source: it stops the reader (cancelling the upstream
// when the reader is blocked on it) and ends the wrapped source.
func (s *stream) End(err error) {
	close(s.stop)
	select {
	case <-s.done:
	default:
		s.opt.Cancel()
		<-s.done
	}
	s.src.End(err)
}
