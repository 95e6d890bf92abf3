package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// httpClient returns a keep-alive client for one target, shared by all the
// vegeta attacks on it so that rounds reuse their connections.
func httpClient(conns int, timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:        conns,
			MaxIdleConnsPerHost: conns,
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true,
		},
	}
}

// attackResult is what one vegeta attack measured.
type attackResult struct {
	latencies []time.Duration // successful requests only
	requests  int
	errors    int
	firstErr  string
	elapsed   time.Duration
	headers   map[string]int // "header=value" -> count, for the gateway's trace headers
}

// traceHeaders are counted per value: they show what the gateway did
// (attempts, fallback depth) for every measured request.
var traceHeaders = []string{"X-Gateway-Attempts", "X-Gateway-Fallback-Depth", "X-Gateway-Provider"}

// attack runs one vegeta attack on t: at most count requests (0: no
// limit) within du, at rate (0: as fast as the workers allow).
func attack(client *http.Client, t Target, payload []byte, rate int, workers, maxWorkers uint64, du time.Duration, count int) attackResult {
	var issued atomic.Int64
	hdr := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json"}}
	for k, v := range t.api().Header {
		hdr.Set(k, v)
	}
	targeter := func(tgt *vegeta.Target) error {
		if count > 0 && issued.Add(1) > int64(count) {
			return vegeta.ErrNoTargets
		}
		tgt.Method, tgt.URL, tgt.Body, tgt.Header = http.MethodPost, t.URL, payload, hdr
		return nil
	}
	a := vegeta.NewAttacker(vegeta.Client(client), vegeta.Workers(workers), vegeta.MaxWorkers(maxWorkers))
	pacer := vegeta.ConstantPacer{Freq: rate, Per: time.Second}
	res := attackResult{headers: map[string]int{}}
	if count > 0 {
		res.latencies = make([]time.Duration, 0, count)
	}
	start := time.Now()
	for r := range a.Attack(vegeta.Targeter(targeter), pacer, du, t.Name) {
		if r.Error == vegeta.ErrNoTargets.Error() {
			continue // the count bound, not a request
		}
		res.requests++
		if r.Error != "" || r.Code != http.StatusOK {
			res.errors++
			if res.firstErr == "" {
				res.firstErr = fmt.Sprintf("status %d: %s", r.Code, r.Error)
			}
			continue
		}
		res.latencies = append(res.latencies, r.Latency)
		for _, h := range traceHeaders {
			if v := r.Headers.Get(h); v != "" {
				res.headers[h+"="+v]++
			}
		}
	}
	res.elapsed = time.Since(start)
	return res
}

// LatencyResult is one target's figures in latency mode.
type LatencyResult struct {
	Latency    Dist           `json:"latency"`
	Requests   int            `json:"requests"`
	Errors     int            `json:"errors"`
	FirstError string         `json:"first_error,omitempty"`
	CPUPerReq  *float64       `json:"cpu_us_per_request,omitempty"`
	Headers    map[string]int `json:"gateway_headers,omitempty"`
}

// LatencyReport is the output of latency mode.
type LatencyReport struct {
	Mode      string                    `json:"mode"`
	BodyBytes int                       `json:"body_bytes"`
	Rounds    int                       `json:"rounds"`
	PerRound  int                       `json:"requests_per_round"`
	Order     []string                  `json:"order"`
	Paths     map[string]*LatencyResult `json:"paths"`
}

func runLatency(args []string) error {
	fs := flag.NewFlagSet("latency", flag.ExitOnError)
	var targets targetList
	pids := pidMap{}
	fs.Var(&targets, "target", "name=URL[@model] (repeat)")
	fs.Var(pids, "pid", "name=PID of the process serving that target (repeat)")
	size := fs.Int("body-bytes", 200, "request body size")
	rounds := fs.Int("rounds", 5, "rounds; each round runs -n requests on every target in turn")
	n := fs.Int("n", 200, "requests per target per round")
	warm := fs.Int("warmup", 50, "unmeasured requests per target first")
	timeout := fs.Duration("timeout", 60*time.Second, "bound on one target's round")
	out := fs.String("out", "-", "output JSON file")
	fs.Parse(args)
	if len(targets) == 0 {
		return errors.New("no -target")
	}
	rep := LatencyReport{Mode: "latency", Rounds: *rounds, PerRound: *n, Paths: map[string]*LatencyResult{}}
	clients := map[string]*http.Client{}
	lat := map[string][]time.Duration{}
	meters := map[string]*cpuMeter{}
	for _, t := range targets {
		rep.Order = append(rep.Order, t.Name)
		clients[t.Name] = httpClient(4, 30*time.Second)
		meters[t.Name] = newCPUMeter(pids[t.Name])
		rep.Paths[t.Name] = &LatencyResult{Headers: map[string]int{}}
		if *warm > 0 {
			w := attack(clients[t.Name], t, body(t, false, *size), 0, 1, 1, *timeout, *warm)
			if w.errors > 0 {
				return fmt.Errorf("%s: warm-up: %d/%d errors, first: %s", t.Name, w.errors, w.requests, w.firstErr)
			}
		}
	}
	rep.BodyBytes = len(body(targets[0], false, *size))
	for r := 0; r < *rounds; r++ {
		for _, t := range targets {
			m := meters[t.Name]
			m.begin()
			res := attack(clients[t.Name], t, body(t, false, *size), 0, 1, 1, *timeout, *n)
			m.end()
			pr := rep.Paths[t.Name]
			pr.Requests += res.requests
			pr.Errors += res.errors
			if pr.FirstError == "" {
				pr.FirstError = res.firstErr
			}
			lat[t.Name] = append(lat[t.Name], res.latencies...)
			for k, v := range res.headers {
				pr.Headers[k] += v
			}
		}
	}
	for _, t := range targets {
		pr := rep.Paths[t.Name]
		pr.Latency = distOf(lat[t.Name])
		pr.CPUPerReq = meters[t.Name].perRequestUS(pr.Requests)
		fmt.Fprintf(os.Stderr, "latency %-12s n=%d p50=%.0fus p99=%.0fus errors=%d\n", t.Name, pr.Latency.N, pr.Latency.P50, pr.Latency.P99, pr.Errors)
	}
	if err := writeJSON(*out, rep); err != nil {
		return err
	}
	for _, t := range targets {
		if pr := rep.Paths[t.Name]; pr.Errors > 0 {
			return fmt.Errorf("%s: %d/%d requests failed, first: %s", t.Name, pr.Errors, pr.Requests, pr.FirstError)
		}
	}
	return nil
}

// SatStep is one constant-rate step of the saturation search.
type SatStep struct {
	Rate       int      `json:"rate"`
	Requests   int      `json:"requests"`
	Errors     int      `json:"errors"`
	Achieved   float64  `json:"achieved_rps"`
	P50        float64  `json:"p50_us"`
	P99        float64  `json:"p99_us"`
	CPUPerReq  *float64 `json:"cpu_us_per_request,omitempty"`
	Pass       bool     `json:"pass"`
	Why        string   `json:"why,omitempty"`
	FirstError string   `json:"first_error,omitempty"`
}

// SatResult is one target's saturation figures: the best passing step.
type SatResult struct {
	MaxRate   int       `json:"max_rate"`
	Achieved  float64   `json:"achieved_rps"`
	P50       float64   `json:"p50_us"`
	P99       float64   `json:"p99_us"`
	CPUPerReq *float64  `json:"cpu_us_per_request,omitempty"`
	Steps     []SatStep `json:"steps"`
}

// SatReport is the output of saturate mode.
type SatReport struct {
	Mode      string                `json:"mode"`
	BodyBytes int                   `json:"body_bytes"`
	P99Limit  float64               `json:"p99_limit_us"`
	StepSecs  float64               `json:"step_seconds"`
	Order     []string              `json:"order"`
	Paths     map[string]*SatResult `json:"paths"`
}

func runSaturate(args []string) error {
	fs := flag.NewFlagSet("saturate", flag.ExitOnError)
	var targets targetList
	pids := pidMap{}
	fs.Var(&targets, "target", "name=URL[@model] (repeat)")
	fs.Var(pids, "pid", "name=PID of the process serving that target (repeat)")
	size := fs.Int("body-bytes", 200, "request body size")
	stepDur := fs.Duration("step", 3*time.Second, "duration of one constant-rate step")
	startRate := fs.Int("start-rate", 500, "first rate tried (requests/s)")
	maxRate := fs.Int("max-rate", 50000, "highest rate tried")
	minRate := fs.Int("min-rate", 50, "lowest rate tried")
	maxSteps := fs.Int("max-steps", 12, "steps per target (bound)")
	p99Limit := fs.Duration("p99", 10*time.Millisecond, "p99 limit of a passing step")
	tries := fs.Int("tries", 3, "runs of a failing step before it is believed (the machine may be shared)")
	warm := fs.Duration("warm", time.Second, "unmeasured load at half the start rate first")
	settle := fs.Duration("settle", 300*time.Millisecond, "pause between steps")
	bestDir := fs.String("best-dir", "", "also write each target's highest passing rate to DIR/sat_<name>.rate")
	out := fs.String("out", "-", "output JSON file")
	fs.Parse(args)
	if len(targets) == 0 {
		return errors.New("no -target")
	}
	rep := SatReport{Mode: "saturate", P99Limit: us(*p99Limit), StepSecs: stepDur.Seconds(), Paths: map[string]*SatResult{}}
	rep.BodyBytes = len(body(targets[0], false, *size))
	for _, t := range targets {
		rep.Order = append(rep.Order, t.Name)
		client := httpClient(1024, 5*time.Second)
		payload := body(t, false, *size)
		// Warm up: connections, the proxy's pools, the runtime.
		attack(client, t, payload, *startRate/2+1, 8, 64, *warm, 0)
		res := &SatResult{}
		rep.Paths[t.Name] = res
		step := func(rate int) SatStep {
			var s SatStep
			for try := 0; try < max(1, *tries); try++ {
				time.Sleep(*settle)
				s = satStep(client, t, payload, rate, *stepDur, *p99Limit, pids[t.Name])
				res.Steps = append(res.Steps, s)
				fmt.Fprintf(os.Stderr, "saturate %-10s rate=%-6d achieved=%-8.0f p99=%-8.0fus errors=%d pass=%v %s\n",
					t.Name, rate, s.Achieved, s.P99, s.Errors, s.Pass, s.Why)
				if s.Pass {
					break
				}
			}
			return s
		}
		lo, hi := 0, 0 // highest passing, lowest failing
		var best SatStep
		rate := *startRate
		for steps := 0; steps < *maxSteps; steps++ {
			s := step(rate)
			if s.Pass {
				lo, best = rate, s
			} else {
				hi = rate
			}
			switch {
			case hi == 0: // nothing failed yet: double
				if rate >= *maxRate {
					steps = *maxSteps
					continue
				}
				rate = min(rate*2, *maxRate)
			case lo == 0: // nothing passed yet: halve
				if rate <= *minRate {
					steps = *maxSteps
					continue
				}
				rate = max(rate/2, *minRate)
			default: // bisect until within 5%
				if float64(hi)/float64(lo) <= 1.05 {
					steps = *maxSteps
					continue
				}
				rate = (lo + hi) / 2
			}
		}
		res.MaxRate, res.Achieved, res.P50, res.P99, res.CPUPerReq = lo, best.Achieved, best.P50, best.P99, best.CPUPerReq
		client.CloseIdleConnections()
		if *bestDir != "" {
			if err := os.WriteFile(filepath.Join(*bestDir, "sat_"+t.Name+".rate"), []byte(strconv.Itoa(lo)+"\n"), 0o644); err != nil {
				return err
			}
		}
	}
	return writeJSON(*out, rep)
}

// satStep runs one constant-rate step and judges it.
func satStep(client *http.Client, t Target, payload []byte, rate int, du, p99Limit time.Duration, pid int) SatStep {
	m := newCPUMeter(pid)
	m.begin()
	r := attack(client, t, payload, rate, 16, 2000, du, 0)
	m.end()
	d := distOf(r.latencies)
	s := SatStep{Rate: rate, Requests: r.requests, Errors: r.errors, P50: d.P50, P99: d.P99,
		Achieved: float64(r.requests-r.errors) / r.elapsed.Seconds(), CPUPerReq: m.perRequestUS(r.requests), FirstError: r.firstErr}
	s.Achieved = float64(int(s.Achieved*10)) / 10
	switch {
	case r.errors > 0:
		s.Why = fmt.Sprintf("%d errors", r.errors)
	case d.P99 >= us(p99Limit):
		s.Why = "p99 over the limit"
	case s.Achieved < 0.95*float64(rate):
		s.Why = "achieved rate under 95% of the target rate"
	default:
		s.Pass = true
	}
	return s
}
