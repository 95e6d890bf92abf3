package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// streamClient returns a client for SSE load: one connection per
// concurrent stream, no total timeout (the context bounds each stream).
func streamClient(conns int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}}
}

// streamObs is what one stream looked like to the client.
type streamObs struct {
	ttfb   time.Duration   // request sent -> first data frame read
	ttfc   time.Duration   // request sent -> first frame with content text read
	gaps   []time.Duration // between consecutive data frames
	frames int
	err    error
}

var (
	dataPrefix  = []byte("data:")
	eventPrefix = []byte("event:")
	doneData    = []byte("[DONE]")
	// contentText starts a non-empty content string in a chat chunk.
	contentText = []byte(`"content":"`)
	errorData   = []byte(`{"error"`)
)

// doStream sends one streaming request and reads its SSE frames, noting
// when each data frame was complete. onFirst, when set, is called after
// the first data frame. A stream that does not end with its API's last
// frame ([DONE], message_stop, response.completed) is an error (unless ctx
// was cancelled by the caller after onFirst).
func doStream(ctx context.Context, client *http.Client, t Target, payload []byte, onFirst func()) streamObs {
	var o streamObs
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.URL, bytes.NewReader(payload))
	if err != nil {
		o.err = err
		return o
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	api := t.api()
	for k, v := range api.Header {
		req.Header.Set(k, v)
	}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		o.err = err
		return o
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		o.err = fmt.Errorf("status %d: %s", resp.StatusCode, bytes.TrimSpace(b))
		return o
	}
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	var last time.Time
	var data []byte
	var event string
	hasData, done := false, false
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			if err == io.EOF && done {
				return o
			}
			if err == io.EOF {
				err = fmt.Errorf("%s stream ended without its last frame", api.Name)
			}
			o.err = err
			return o
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) > 0 {
			if bytes.HasPrefix(line, dataPrefix) {
				data = append(data[:0], bytes.TrimSpace(line[len(dataPrefix):])...)
				hasData = true
			} else if bytes.HasPrefix(line, eventPrefix) {
				event = string(bytes.TrimSpace(line[len(eventPrefix):]))
			}
			continue
		}
		if !hasData {
			continue
		}
		now := time.Now()
		hasData = false
		o.frames++
		if o.frames == 1 {
			o.ttfb = now.Sub(start)
			if onFirst != nil {
				onFirst()
			}
		} else {
			o.gaps = append(o.gaps, now.Sub(last))
		}
		last = now
		if o.ttfc == 0 && api.isContent(event, data) {
			o.ttfc = now.Sub(start)
		}
		switch {
		case api.isDone(event, data):
			done = true
		case api.isError(event, data):
			o.err = fmt.Errorf("error frame: %s %.200s", event, data)
			return o
		}
		event = ""
	}
}

// StreamResult is one target's figures in stream mode.
type StreamResult struct {
	TTFB       Dist   `json:"ttfb_first_data_frame"`
	TTFC       Dist   `json:"ttfc_first_content_frame"`
	Gap        Dist   `json:"inter_frame_gap"`
	Streams    int    `json:"streams"`
	Errors     int    `json:"errors"`
	FirstError string `json:"first_error,omitempty"`
	FramesMin  int    `json:"frames_per_stream_min"`
	FramesMax  int    `json:"frames_per_stream_max"`
}

// StreamReport is the output of stream mode.
type StreamReport struct {
	Mode        string                   `json:"mode"`
	Client      string                   `json:"client"`
	Concurrency int                      `json:"concurrency"`
	Rounds      int                      `json:"rounds"`
	PerRound    int                      `json:"streams_per_round"`
	Order       []string                 `json:"order"`
	Paths       map[string]*StreamResult `json:"paths"`
}

func runStream(args []string) error {
	fs := flag.NewFlagSet("stream", flag.ExitOnError)
	var targets targetList
	fs.Var(&targets, "target", "name=URL[@model] (repeat)")
	conc := fs.Int("c", 4, "concurrent streams")
	n := fs.Int("n", 16, "streams per target per round")
	rounds := fs.Int("rounds", 3, "rounds; each round runs -n streams on every target in turn")
	size := fs.Int("body-bytes", 200, "request body size")
	timeout := fs.Duration("timeout", 60*time.Second, "bound on one stream")
	out := fs.String("out", "-", "output JSON file")
	fs.Parse(args)
	if len(targets) == 0 {
		return errors.New("no -target")
	}
	rep := StreamReport{Mode: "stream", Client: "loadgen's own SSE client (frame timestamps; vegeta does not read SSE)",
		Concurrency: *conc, Rounds: *rounds, PerRound: *n, Paths: map[string]*StreamResult{}}
	clients := map[string]*http.Client{}
	ttfb := map[string][]time.Duration{}
	ttfc := map[string][]time.Duration{}
	gaps := map[string][]time.Duration{}
	for _, t := range targets {
		rep.Order = append(rep.Order, t.Name)
		clients[t.Name] = streamClient(*conc)
		rep.Paths[t.Name] = &StreamResult{FramesMin: -1}
		// One unmeasured stream: connections and pools.
		ctx, cancel := context.WithTimeout(context.Background(), *timeout)
		o := doStream(ctx, clients[t.Name], t, body(t, true, *size), nil)
		cancel()
		if o.err != nil {
			return fmt.Errorf("%s: warm-up stream: %w", t.Name, o.err)
		}
	}
	for r := 0; r < *rounds; r++ {
		for _, t := range targets {
			payload := body(t, true, *size)
			obs := make([]streamObs, *n)
			var next atomic.Int64
			var wg sync.WaitGroup
			for w := 0; w < *conc; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						i := int(next.Add(1)) - 1
						if i >= *n {
							return
						}
						ctx, cancel := context.WithTimeout(context.Background(), *timeout)
						obs[i] = doStream(ctx, clients[t.Name], t, payload, nil)
						cancel()
					}
				}()
			}
			wg.Wait()
			pr := rep.Paths[t.Name]
			for _, o := range obs {
				pr.Streams++
				if o.err != nil {
					pr.Errors++
					if pr.FirstError == "" {
						pr.FirstError = o.err.Error()
					}
					continue
				}
				ttfb[t.Name] = append(ttfb[t.Name], o.ttfb)
				ttfc[t.Name] = append(ttfc[t.Name], o.ttfc)
				gaps[t.Name] = append(gaps[t.Name], o.gaps...)
				if pr.FramesMin < 0 || o.frames < pr.FramesMin {
					pr.FramesMin = o.frames
				}
				pr.FramesMax = max(pr.FramesMax, o.frames)
			}
		}
	}
	var failed error
	for _, t := range targets {
		pr := rep.Paths[t.Name]
		pr.TTFB, pr.TTFC, pr.Gap = distOf(ttfb[t.Name]), distOf(ttfc[t.Name]), distOf(gaps[t.Name])
		fmt.Fprintf(os.Stderr, "stream %-12s streams=%d ttfb p50=%.0fus p99=%.0fus gap p50=%.0fus p99=%.0fus frames=%d..%d errors=%d\n",
			t.Name, pr.Streams, pr.TTFB.P50, pr.TTFB.P99, pr.Gap.P50, pr.Gap.P99, pr.FramesMin, pr.FramesMax, pr.Errors)
		if pr.Errors > 0 && failed == nil {
			failed = fmt.Errorf("%s: %d/%d streams failed, first: %s", t.Name, pr.Errors, pr.Streams, pr.FirstError)
		}
	}
	if err := writeJSON(*out, rep); err != nil {
		return err
	}
	return failed
}

// HoldResult is one target's memory figures with N open streams.
type HoldResult struct {
	Streams       int     `json:"streams"`
	Opened        int     `json:"opened"`
	OpenSeconds   float64 `json:"seconds_to_open_all"`
	IdleRSSKB     int64   `json:"idle_rss_kb"`
	HWMBeforeKB   int64   `json:"hwm_before_kb"`
	PeakHWMKB     int64   `json:"peak_hwm_kb"`
	RSSHoldKB     int64   `json:"rss_while_open_kb"`
	PerStreamKB   float64 `json:"per_stream_kb"`
	PerStreamRSS  float64 `json:"per_stream_kb_from_rss"`
	Errors        int     `json:"errors"`
	FirstError    string  `json:"first_error,omitempty"`
	HoldSeconds   float64 `json:"hold_seconds"`
	PeakAboveIdle bool    `json:"peak_reached_during_streams"`
}

// HoldReport is the output of hold mode.
type HoldReport struct {
	Mode  string                 `json:"mode"`
	Order []string               `json:"order"`
	Paths map[string]*HoldResult `json:"paths"`
}

func runHold(args []string) error {
	fs := flag.NewFlagSet("hold", flag.ExitOnError)
	var targets targetList
	pids := pidMap{}
	fs.Var(&targets, "target", "name=URL[@model] (repeat)")
	fs.Var(pids, "pid", "name=PID of the process serving that target (repeat, required)")
	streams := fs.Int("streams", 1000, "concurrent open streams per target")
	dialers := fs.Int("open-concurrency", 64, "streams being opened at once")
	openTimeout := fs.Duration("open-timeout", 60*time.Second, "bound on opening all streams")
	hold := fs.Duration("hold", 2*time.Second, "how long all streams are held open before reading the peak")
	size := fs.Int("body-bytes", 200, "request body size")
	out := fs.String("out", "-", "output JSON file")
	fs.Parse(args)
	if len(targets) == 0 {
		return errors.New("no -target")
	}
	rep := HoldReport{Mode: "hold", Paths: map[string]*HoldResult{}}
	var failed error
	for _, t := range targets {
		pid := pids[t.Name]
		if pid == 0 {
			return fmt.Errorf("%s: no -pid", t.Name)
		}
		rep.Order = append(rep.Order, t.Name)
		res, err := holdOne(t, pid, *streams, *dialers, *openTimeout, *hold, *size)
		if err != nil {
			return fmt.Errorf("%s: %w", t.Name, err)
		}
		rep.Paths[t.Name] = res
		fmt.Fprintf(os.Stderr, "hold %-12s opened=%d/%d in %.1fs idle=%dKB peak=%dKB per-stream=%.1fKB errors=%d\n",
			t.Name, res.Opened, res.Streams, res.OpenSeconds, res.IdleRSSKB, res.PeakHWMKB, res.PerStreamKB, res.Errors)
		if res.Opened < res.Streams && failed == nil {
			failed = fmt.Errorf("%s: only %d of %d streams opened; first error: %s", t.Name, res.Opened, res.Streams, res.FirstError)
		}
	}
	if err := writeJSON(*out, rep); err != nil {
		return err
	}
	return failed
}

func holdOne(t Target, pid, n, dialers int, openTimeout, hold time.Duration, size int) (*HoldResult, error) {
	client := streamClient(n)
	defer client.CloseIdleConnections()
	// Warm the process with one plain request, then read its idle RSS.
	w := attack(httpClient(1, 10*time.Second), t, body(t, false, size), 0, 1, 1, 10*time.Second, 1)
	if w.errors > 0 || w.requests == 0 {
		return nil, fmt.Errorf("warm-up request failed: %s", w.firstErr)
	}
	time.Sleep(300 * time.Millisecond)
	idle, hwmBefore, err := memKB(pid)
	if err != nil {
		return nil, err
	}
	res := &HoldResult{Streams: n, IdleRSSKB: idle, HWMBeforeKB: hwmBefore}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	payload := body(t, true, size)
	var opened atomic.Int64
	allOpen := make(chan struct{})
	sem := make(chan struct{}, dialers)
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	deadline := time.NewTimer(openTimeout)
	defer deadline.Stop()
launch:
	for i := 0; i < n; i++ {
		select {
		case sem <- struct{}{}:
		case <-deadline.C:
			break launch
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			released := false
			release := func() {
				if !released {
					released = true
					<-sem
				}
			}
			defer release()
			o := doStream(ctx, client, t, payload, func() {
				release()
				if opened.Add(1) == int64(n) {
					close(allOpen)
				}
			})
			if o.err != nil && ctx.Err() == nil {
				mu.Lock()
				res.Errors++
				if res.FirstError == "" {
					res.FirstError = o.err.Error()
				}
				mu.Unlock()
			}
		}()
	}
	select {
	case <-allOpen:
	case <-time.After(max(0, openTimeout-time.Since(start))):
	}
	res.OpenSeconds = time.Since(start).Seconds()
	res.Opened = int(opened.Load())
	time.Sleep(hold)
	res.HoldSeconds = hold.Seconds()
	rss, hwm, err := memKB(pid)
	if err != nil {
		return nil, err
	}
	res.RSSHoldKB, res.PeakHWMKB = rss, hwm
	res.PeakAboveIdle = hwm > hwmBefore
	if res.Opened > 0 {
		res.PerStreamKB = float64(int(float64(hwm-idle)/float64(res.Opened)*100)) / 100
		res.PerStreamRSS = float64(int(float64(rss-idle)/float64(res.Opened)*100)) / 100
	}
	cancel()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		return nil, errors.New("streams did not end within 30s of cancel")
	}
	return res, nil
}
