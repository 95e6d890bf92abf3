// Command report turns the raw outputs of one scripts/bench.sh run into
// results.md: the machine, the date, the exact command, the side-by-side
// table (gateway | ReverseProxy floor | ratio | raw TCP relay | direct), the
// goals marked met or missed, and the Go benchmark and profile excerpts.
// Every number in it is read from the raw files; none is typed in.
//
//	report -raw docs/bench/raw -out docs/bench/results.md -command "scripts/bench.sh"
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
)

// Paths are the four ways to the mock upstream, as named in the raw files.
const (
	gw     = "gateway"
	rp     = "revproxy"
	tcp    = "tcprelay"
	direct = "direct"
)

func main() {
	raw := flag.String("raw", "docs/bench/raw", "directory of the raw outputs")
	out := flag.String("out", "docs/bench/results.md", "the report to write")
	command := flag.String("command", "scripts/bench.sh", "the command that produced the raw outputs")
	goVersion := flag.String("go", runtime.Version(), "go version used for the build")
	smoke := flag.Bool("smoke", false, "the run was SMOKE=1 (tiny counts: not a measurement)")
	flag.Parse()
	r := &reporter{raw: *raw}
	md := r.render(*command, *goVersion, *smoke)
	if err := os.WriteFile(*out, []byte(md), 0o644); err != nil {
		log.Fatal(err)
	}
	fmt.Fprintf(os.Stderr, "report: wrote %s\n", *out)
}

type reporter struct {
	raw string
	b   strings.Builder
}

func (r *reporter) p(format string, a ...any) { fmt.Fprintf(&r.b, format+"\n", a...) }

// load decodes raw/name into v; false when the file is missing or bad.
func (r *reporter) load(name string, v any) bool {
	b, err := os.ReadFile(filepath.Join(r.raw, name))
	if err != nil {
		return false
	}
	return json.Unmarshal(b, v) == nil
}

func (r *reporter) text(name string) string {
	b, err := os.ReadFile(filepath.Join(r.raw, name))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// The shapes of the raw files (subsets of what loadgen writes).
type dist struct {
	N    int     `json:"n"`
	P50  float64 `json:"p50_us"`
	P99  float64 `json:"p99_us"`
	Mean float64 `json:"mean_us"`
}

type latencyFile struct {
	BodyBytes int `json:"body_bytes"`
	Paths     map[string]struct {
		Latency   dist           `json:"latency"`
		Errors    int            `json:"errors"`
		CPUPerReq *float64       `json:"cpu_us_per_request"`
		Headers   map[string]int `json:"gateway_headers"`
	} `json:"paths"`
}

type satFile struct {
	P99Limit float64 `json:"p99_limit_us"`
	StepSecs float64 `json:"step_seconds"`
	Paths    map[string]struct {
		MaxRate   int      `json:"max_rate"`
		Achieved  float64  `json:"achieved_rps"`
		P99       float64  `json:"p99_us"`
		CPUPerReq *float64 `json:"cpu_us_per_request"`
	} `json:"paths"`
}

type streamFile struct {
	Client      string `json:"client"`
	Concurrency int    `json:"concurrency"`
	Paths       map[string]struct {
		TTFB    dist `json:"ttfb_first_data_frame"`
		TTFC    dist `json:"ttfc_first_content_frame"`
		Gap     dist `json:"inter_frame_gap"`
		Streams int  `json:"streams"`
		Errors  int  `json:"errors"`
	} `json:"paths"`
}

type holdFile struct {
	Paths map[string]struct {
		Streams     int     `json:"streams"`
		Opened      int     `json:"opened"`
		IdleRSSKB   int64   `json:"idle_rss_kb"`
		PeakHWMKB   int64   `json:"peak_hwm_kb"`
		PerStreamKB float64 `json:"per_stream_kb"`
	} `json:"paths"`
}

type coldFile struct {
	Name  string `json:"name"`
	Runs  int    `json:"runs"`
	Start dist   `json:"exec_to_first_200"`
}

type hyperfineFile struct {
	Results []struct {
		Command string  `json:"command"`
		Mean    float64 `json:"mean"`
		Median  float64 `json:"median"`
		Stddev  float64 `json:"stddev"`
	} `json:"results"`
}

type storeFile struct {
	Status string `json:"status"`
	Reason string `json:"reason"`
	Paths  map[string]struct {
		Requests     int                `json:"requests"`
		ReadsPerReq  float64            `json:"reads_per_request"`
		WritesPerReq float64            `json:"writes_per_request"`
		PerOp        map[string]float64 `json:"calls_per_request_by_operation"`
	} `json:"paths"`
}

// lambdaFile is raw/lambda.json (scripts/bench/lambdabench).
type lambdaFile struct {
	Status string `json:"status"`
	Init   struct {
		Runs          int                `json:"runs"`
		Gateway       dist               `json:"gateway_start_to_ready"`
		Hello         dist               `json:"hello_start_to_ready"`
		SDKHello      *dist              `json:"sdk_hello_start_to_ready"`
		RequiredSDK   *dist              `json:"required_sdk_hello_start_to_ready"`
		GatewayFirst  dist               `json:"gateway_first_invocation"`
		HelloFirst    dist               `json:"hello_first_invocation"`
		DynamoPerInit map[string]float64 `json:"dynamodb_calls_per_gateway_cold_start"`
		SSMPerInit    map[string]float64 `json:"ssm_calls_per_gateway_cold_start"`
	} `json:"init"`
	Invocations map[string]struct {
		Invocations   int  `json:"invocations"`
		Duration      dist `json:"duration"`
		AfterLastByte dist `json:"after_last_byte"`
	} `json:"invocations"`
	Store struct {
		Requests     int                `json:"requests"`
		Seconds      float64            `json:"seconds"`
		ReadsPerReq  float64            `json:"reads_per_request"`
		WritesPerReq float64            `json:"writes_per_request"`
		PerOp        map[string]float64 `json:"calls_per_request_by_operation"`
		PerKind      map[string]float64 `json:"calls_per_request_by_operation_and_item"`
	} `json:"dynamodb_warm"`
	SSM      map[string]float64 `json:"ssm_calls_per_request_by_operation"`
	SSMCalls map[string]int64   `json:"ssm_calls_in_window"`
	Refresh  string             `json:"config_refresh"`
	Slow     *struct {
		Store struct {
			Requests     int                `json:"requests"`
			ReadsPerReq  float64            `json:"reads_per_request"`
			WritesPerReq float64            `json:"writes_per_request"`
			PerKind      map[string]float64 `json:"calls_per_request_by_operation_and_item"`
		} `json:"dynamodb"`
		Duration      dist `json:"duration"`
		AfterLastByte dist `json:"after_last_byte"`
	} `json:"slow_upstream"`
}

// row is one line of the table; nil cells print as "–".
type row struct {
	name                    string
	gw, rp, tcp, direct     *float64
	unit                    string
	decimals                int
	ratio                   string // overrides the computed gateway/floor ratio
	gwText, rpText, dirText string // text cells instead of numbers
	tcpText                 string
}

func f(v float64) *float64 { return &v }

func (w row) cell(v *float64, text string) string {
	if text != "" {
		return text
	}
	if v == nil {
		return "–"
	}
	return strconv.FormatFloat(*v, 'f', w.decimals, 64) + " " + w.unit
}

func (w row) ratioCell() string {
	if w.ratio != "" {
		return w.ratio
	}
	if w.gw == nil || w.rp == nil {
		return "–"
	}
	if *w.rp <= 0 {
		return "n/a (floor ≤ 0)"
	}
	return fmt.Sprintf("%.2fx", *w.gw / *w.rp)
}

// stageStatus reads raw/stages.tsv: stage -> "ok" or "FAILED".
func (r *reporter) stageStatus() (map[string]string, []string) {
	st := map[string]string{}
	var order []string
	for _, line := range strings.Split(r.text("stages.tsv"), "\n") {
		f := strings.Split(line, "\t")
		if len(f) >= 2 {
			st[f[0]] = f[1]
			order = append(order, line)
		}
	}
	return st, order
}

func (r *reporter) render(command, goVersion string, smoke bool) string {
	stages, stageLines := r.stageStatus()
	r.p("# Benchmark results: the gateway against the physical floor")
	r.p("")
	r.p("Generated by `scripts/bench/report` from the raw outputs in `raw/` of one run of")
	r.p("`scripts/bench.sh`. Nothing here is typed in: re-run the command to replace it.")
	if smoke {
		r.p("")
		r.p("**SMOKE RUN (SMOKE=1): tiny counts to keep the harness working; these numbers are not measurements.**")
	}
	r.p("")
	r.p("## Run")
	r.p("")
	r.p("| | |")
	r.p("|---|---|")
	r.p("| date | %s |", orDash(r.text("date.txt")))
	r.p("| command | `%s` |", command)
	r.p("| CPU | %s |", orDash(lscpuModel()))
	r.p("| cores | %d (GOMAXPROCS default in every process; load generator, mock, proxy share them) |", runtime.NumCPU())
	r.p("| memory | %s |", orDash(memTotal()))
	r.p("| kernel | %s |", orDash(cmdOut("uname", "-r")))
	r.p("| go | %s |", goVersion)
	r.p("| load average at start / end | %s / %s |", orDash(r.text("loadavg_start.txt")), orDash(r.text("loadavg_end.txt")))
	if st := r.text("gateway_store.txt"); st != "" {
		r.p("| gateway's store (main stages) | %s (local mode's default kind; one usage record per request, written by the background batch writer, pkg/usage/asyncrecorder) |", st)
	}
	if note := r.text("note.txt"); note != "" {
		r.p("| note | %s |", note)
	}
	r.p("")
	r.p("Stages (name, status, seconds): %s", strings.ReplaceAll(strings.Join(stageLines, "; "), "\t", " "))
	r.p("")

	goals := r.table(stages)
	r.p("")
	r.p("## Goals")
	r.p("")
	for _, g := range goals {
		r.p("- %s", g)
	}
	r.goBench()
	r.profiles()
	r.method()
	return r.b.String()
}

// added returns path minus direct for a distribution field.
func added(paths map[string]dist, p string, q func(dist) float64) *float64 {
	d, ok1 := paths[direct]
	v, ok2 := paths[p]
	if !ok1 || !ok2 || v.N == 0 || d.N == 0 {
		return nil
	}
	return f(q(v) - q(d))
}

func abs(paths map[string]dist, p string, q func(dist) float64) *float64 {
	v, ok := paths[p]
	if !ok || v.N == 0 {
		return nil
	}
	return f(q(v))
}

func p50(d dist) float64 { return d.P50 }
func p99(d dist) float64 { return d.P99 }

func (r *reporter) table(stages map[string]string) []string {
	var rows []row
	var goals []string
	failed := func(stage string) bool { return stages[stage] != "" && stages[stage] != "ok" }

	r.p("## The table")
	r.p("")
	r.p("Added = the path's figure minus the direct figure (load generator -> mock). Ratio = gateway / ReverseProxy floor.")
	r.p("")
	// Saturation (Chat Completions).
	var satRows []row
	var satGoals []string
	var sf satFile
	if r.load("saturate.json", &sf) {
		get := func(p string, fn func(int, float64, *float64) *float64) *float64 {
			v, ok := sf.Paths[p]
			if !ok {
				return nil
			}
			return fn(v.MaxRate, v.Achieved, v.CPUPerReq)
		}
		thr := func(_ int, a float64, _ *float64) *float64 { return f(a) }
		cpu := func(_ int, _ float64, c *float64) *float64 { return c }
		satRows = append(satRows, row{name: fmt.Sprintf("throughput at saturation (p99 < %.0f ms, 0 errors; %s steps)", sf.P99Limit/1000, trim(sf.StepSecs)), unit: "req/s",
			gw: get(gw, thr), rp: get(rp, thr), tcp: get(tcp, thr), direct: get(direct, thr)})
		satRows = append(satRows, row{name: "CPU per request at that rate (proxy process; direct: the mock)", unit: "µs", decimals: 0,
			gw: get(gw, cpu), rp: get(rp, cpu), tcp: get(tcp, cpu), direct: get(direct, cpu)})
		satGoals = append(satGoals, missedSee(ratioGoal("saturation throughput >= 90% of ReverseProxy's", get(gw, thr), get(rp, thr), 0.9, true, "req/s"),
			"CPU per request at that rate (the row above; the load generator, the mock and the proxy share 2 cores, so throughput follows it) and where it goes (`raw/pprof_gateway_saturation.txt`, `raw/pprof_gateway_saturation_cum.txt`)"))
	} else {
		satRows = append(satRows, row{name: "throughput at saturation", gwText: missing("saturate", failed("saturate"))})
		satGoals = append(satGoals, "saturation throughput >= 90% of ReverseProxy's: not measured ("+missing("saturate", failed("saturate"))+")")
	}

	// Latency at concurrency 1, streaming and memory: one section per
	// client API, each against the ReverseProxy on the same API's path.
	for _, api := range apis {
		rr, gg := r.apiRows(api, failed)
		rows, goals = append(rows, rr...), append(goals, gg...)
		if api.name == "chat" {
			rows, goals = append(rows, satRows...), append(goals, satGoals...)
		}
	}
	// Cold start and size.
	cold, cold99 := map[string]*float64{}, map[string]*float64{}
	for _, p := range []string{gw, rp, tcp, direct} {
		var cf coldFile
		if r.load("cold_"+p+".json", &cf) && cf.Runs > 0 {
			cold[p], cold99[p] = f(cf.Start.P50/1000), f(cf.Start.P99/1000)
		}
	}
	if len(cold) > 0 {
		rows = append(rows, row{name: "cold start p50: exec -> first 200 on /healthz (Go loop)", unit: "ms", decimals: 1,
			gw: cold[gw], rp: cold[rp], tcp: cold[tcp], direct: cold[direct]})
		rows = append(rows, row{name: "cold start p99 (Go loop)", unit: "ms", decimals: 1,
			gw: cold99[gw], rp: cold99[rp], tcp: cold99[tcp], direct: cold99[direct]})
		var hyp hyperfineFile
		if r.load("cold_hyperfine.json", &hyp) && len(hyp.Results) > 0 {
			hv := map[string]*float64{}
			for _, res := range hyp.Results {
				for _, p := range []string{gw, rp} {
					if res.Command == p {
						hv[p] = f(res.Median * 1000)
					}
				}
			}
			rows = append(rows, row{name: "cold start median (hyperfine running the probe; includes the probe process's own start)", unit: "ms", decimals: 1, gw: hv[gw], rp: hv[rp]})
		}
		if v := cold[gw]; v != nil {
			goals = append(goals, absGoal("cold start (exec -> first 200) < 30 ms", *v, 30, "ms"))
		}
	} else {
		rows = append(rows, row{name: "cold start", gwText: missing("cold", failed("cold"))})
		goals = append(goals, "cold start < 30 ms: not measured ("+missing("cold", failed("cold"))+")")
	}
	sizes := r.sizes()
	if len(sizes) > 0 {
		mb := func(k string) *float64 {
			if v, ok := sizes[k]; ok {
				return f(float64(v) / (1 << 20))
			}
			return nil
		}
		rows = append(rows, row{name: "binary size, not stripped (floor: floorproxy, both modes)", unit: "MiB", decimals: 1,
			gw: mb("gateway"), rp: mb("floorproxy"), tcp: mb("floorproxy"), direct: mb("mockupstream")})
		rows = append(rows, row{name: "binary size, stripped (-ldflags='-s -w')", unit: "MiB", decimals: 1,
			gw: mb("gateway.stripped"), rp: mb("floorproxy.stripped"), tcp: mb("floorproxy.stripped"), direct: mb("mockupstream.stripped")})
	}

	// Failover.
	var ff latencyFile
	if r.load("failover.json", &ff) {
		paths := map[string]dist{}
		for k, v := range ff.Paths {
			paths[k] = v.Latency
		}
		over := func(p string, q func(dist) float64) *float64 {
			a, ok1 := paths[p]
			h, ok2 := paths["happy"]
			if !ok1 || !ok2 || a.N == 0 || h.N == 0 {
				return nil
			}
			return f(q(a) - q(h))
		}
		for _, c := range []struct{ name, key string }{{"primary refuses connections, secondary serves", "refused"}, {"primary's breaker open, secondary serves", "open"}} {
			for _, q := range []struct {
				name string
				fn   func(dist) float64
			}{{"p50", p50}, {"p99", p99}} {
				rows = append(rows, row{name: "failover cost " + q.name + ": " + c.name + " (minus the gateway's happy path)", unit: "µs",
					gw: over(c.key, q.fn), rpText: "n/a (no failover)", tcpText: "n/a", dirText: "n/a", ratio: "–"})
			}
		}
	} else {
		rows = append(rows, row{name: "failover cost", gwText: missing("failover", failed("failover"))})
	}

	// Store.
	var sto storeFile
	if r.load("store.json", &sto) && sto.Status == "measured" {
		for _, c := range []struct{ name, key string }{{"happy path", "happy"}, {"failover (refused primary)", "refused"}} {
			v, ok := sto.Paths[c.key]
			if !ok {
				continue
			}
			rows = append(rows, row{name: fmt.Sprintf("DynamoDB calls per request, %s (%d requests at c=1)", c.name, v.Requests), ratio: "–", rpText: "n/a", tcpText: "n/a", dirText: "n/a",
				gwText: fmt.Sprintf("%.3f reads, %.3f writes (%s)", v.ReadsPerReq, v.WritesPerReq, perOp(v.PerOp))})
		}
		if v, ok := sto.Paths["happy"]; ok {
			state := storeGoal(v.ReadsPerReq, v.WritesPerReq)
			goals = append(goals, fmt.Sprintf("DynamoDB reads per request 0 on the warm happy path and at most 1 write: %s (%.3f reads, %.3f writes per request: %s)", state, v.ReadsPerReq, v.WritesPerReq, perOp(v.PerOp)))
		}
	} else {
		why := "pending: store not wired (the gateway has no -store flag yet; bench.sh measures this by itself once it has)"
		if sto.Status != "" && sto.Status != "pending" {
			why = sto.Status + ": " + sto.Reason
		} else if sto.Reason != "" {
			why = "pending: store not wired (" + sto.Reason + ")"
		}
		if failed("store") && sto.Status == "" {
			why = "stage failed (see raw/store.log)"
		}
		rows = append(rows, row{name: "DynamoDB calls per request (happy path, failover)", gwText: "**" + why + "**", ratio: "–", rpText: "n/a", tcpText: "n/a", dirText: "n/a"})
		goals = append(goals, "DynamoDB reads per request 0 on the warm happy path, at most 1 write: **"+why+"**")
	}

	// Lambda, through the Runtime API emulator; the floor is hello-world lambdaurl.
	lrows, lgoals := r.lambda(failed("lambda"))
	rows = append(rows, lrows...)
	goals = append(goals, lgoals...)

	r.p("| figure | gateway | ReverseProxy floor | ratio | raw TCP relay | direct |")
	r.p("|---|---:|---:|---:|---:|---:|")
	for _, w := range rows {
		r.p("| %s | %s | %s | %s | %s | %s |", w.name, w.cell(w.gw, w.gwText), w.cell(w.rp, w.rpText), w.ratioCell(), w.cell(w.tcp, w.tcpText), w.cell(w.direct, w.dirText))
	}
	return goals
}

// lambda renders raw/lambda.json: init and the time after the last byte
// against the hello-world lambdaurl floor (in the ReverseProxy column), and
// the store calls of the warm happy path.
func (r *reporter) lambda(failed bool) ([]row, []string) {
	var lf lambdaFile
	if !r.load("lambda.json", &lf) || lf.Status != "measured" {
		why := missing("lambda", failed)
		return []row{{name: "Lambda figures (init, after the last byte, DynamoDB calls)", gwText: "**" + why + "**", ratio: "–", rpText: "n/a", tcpText: "n/a", dirText: "n/a"}},
			[]string{"Lambda init ratio to a hello-world lambdaurl binary, billed time after the last byte, DynamoDB calls per request on Lambda: **" + why + "**"}
	}
	ms := func(v float64) *float64 { return f(v / 1000) }
	hello := "hello-world lambdaurl"
	var rows []row
	var goals []string
	for _, q := range []struct {
		name string
		fn   func(dist) float64
	}{{"p50", p50}, {"p99", p99}} {
		rows = append(rows, row{name: fmt.Sprintf("Lambda init %s: process start -> ready for the first invocation (config from SSM, clients created; %d starts; floor: %s)", q.name, lf.Init.Runs, hello),
			unit: "ms", decimals: 2, gw: ms(q.fn(lf.Init.Gateway)), rp: ms(q.fn(lf.Init.Hello)), tcpText: "n/a", dirText: "n/a"})
	}
	if sd := lf.Init.SDKHello; sd != nil {
		rows = append(rows, row{name: fmt.Sprintf("Lambda init p50 against the hello-world with the AWS SDK packages the bootstrap links (scripts/bench/lambdasdkhello: Go's package init of the SDK, %d starts)", lf.Init.Runs),
			unit: "ms", decimals: 2, gw: ms(lf.Init.Gateway.P50), rp: ms(sd.P50), tcpText: "n/a", dirText: "n/a"})
	}
	if rq := lf.Init.RequiredSDK; rq != nil {
		rows = append(rows, row{name: fmt.Sprintf("Lambda init p50 of the hello-world with only the SDK clients the project must use (scripts/bench/lambdarequiredsdk: DynamoDB, SSM, Bedrock Runtime; %d starts) against the hello-world", lf.Init.Runs),
			unit: "ms", decimals: 2, gw: ms(rq.P50), rp: ms(lf.Init.Hello.P50), tcpText: "n/a", dirText: "n/a"})
	}
	rows = append(rows, row{name: fmt.Sprintf("Lambda first invocation after init p50 (non-streaming; floor: %s)", hello),
		unit: "ms", decimals: 2, gw: ms(lf.Init.GatewayFirst.P50), rp: ms(lf.Init.HelloFirst.P50), tcpText: "n/a", dirText: "n/a"})
	h, okH := lf.Invocations["hello"]
	for _, c := range []struct{ key, name string }{{"gateway_nonstream", "non-streaming"}, {"gateway_stream", "streaming"}} {
		v, ok := lf.Invocations[c.key]
		if !ok {
			continue
		}
		for _, q := range []struct {
			name string
			fn   func(dist) float64
		}{{"p50", p50}, {"p99", p99}} {
			w := row{name: fmt.Sprintf("Lambda billed time after the last byte %s, %s (usage record write; warm, %d invocations; floor: %s)", q.name, c.name, v.Invocations, hello),
				unit: "ms", decimals: 2, gw: ms(q.fn(v.AfterLastByte)), tcpText: "n/a", dirText: "n/a"}
			if okH {
				w.rp = ms(q.fn(h.AfterLastByte))
			}
			rows = append(rows, w)
		}
		w := row{name: fmt.Sprintf("Lambda invocation duration p50, %s (Invoke -> next GET next, what Lambda bills; floor: %s)", c.name, hello),
			unit: "ms", decimals: 2, gw: ms(v.Duration.P50), tcpText: "n/a", dirText: "n/a"}
		if okH {
			w.rp = ms(h.Duration.P50)
		}
		rows = append(rows, w)
	}
	st := lf.Store
	ssm := fmt.Sprintf("no SSM calls in the %.1f s window (config refresh every %s)", st.Seconds, lf.Refresh)
	if len(lf.SSMCalls) > 0 {
		ssm = fmt.Sprintf("SSM %s in the %.1f s window (config refresh every %s)", perOp(lf.SSM), st.Seconds, lf.Refresh)
	}
	rows = append(rows, row{name: fmt.Sprintf("DynamoDB calls per request on Lambda, warm happy path (%d requests, half streaming)", st.Requests), ratio: "–", rpText: "n/a", tcpText: "n/a", dirText: "n/a",
		gwText: fmt.Sprintf("%.3f reads, %.3f writes (%s); %s", st.ReadsPerReq, st.WritesPerReq, perOp(st.PerKind), ssm)})
	if sl := lf.Slow; sl != nil {
		rows = append(rows, row{name: fmt.Sprintf("DynamoDB calls per request on Lambda, warm, model answering in %.1f s (%d requests, half streaming)", sl.Duration.P50/1e6, sl.Store.Requests), ratio: "–", rpText: "n/a", tcpText: "n/a", dirText: "n/a",
			gwText: fmt.Sprintf("%.3f reads, %.3f writes (%s)", sl.Store.ReadsPerReq, sl.Store.WritesPerReq, perOp(sl.Store.PerKind))})
		w := row{name: fmt.Sprintf("Lambda billed time after the last byte p50, model answering in %.1f s (floor: %s, fast)", sl.Duration.P50/1e6, hello),
			unit: "ms", decimals: 2, gw: ms(sl.AfterLastByte.P50), tcpText: "n/a", dirText: "n/a"}
		if okH {
			w.rp = ms(h.AfterLastByte.P50)
		}
		rows = append(rows, w)
	}
	rows = append(rows, row{name: "DynamoDB and SSM calls per Lambda cold start (init and the first invocation)", ratio: "–", rpText: "n/a", tcpText: "n/a", dirText: "n/a",
		gwText: fmt.Sprintf("DynamoDB %s; SSM %s", perOp(lf.Init.DynamoPerInit), perOp(lf.Init.SSMPerInit))})

	g, fl := lf.Init.Gateway.P50, lf.Init.Hello.P50
	if fl > 0 {
		verdict := "**MET**"
		if g/fl > 2 {
			verdict = fmt.Sprintf("**MISSED** by %.2fx", g/fl-2)
		}
		sdk := ""
		if sd := lf.Init.SDKHello; sd != nil && sd.P50 > 0 {
			sdk = fmt.Sprintf("; the hello-world with the AWS SDK packages the bootstrap links alone takes %.2f ms (%.2fx hello), the gateway %.2fx that", sd.P50/1000, sd.P50/fl, g/sd.P50)
		}
		if rq := lf.Init.RequiredSDK; rq != nil && rq.P50 > 0 {
			sdk += fmt.Sprintf("; with only the SDK clients the project must use (DynamoDB, SSM, Bedrock Runtime) linked, a hello-world takes %.2f ms (%.2fx hello) before doing anything", rq.P50/1000, rq.P50/fl)
		}
		goals = append(goals, fmt.Sprintf("Lambda init, ratio to a hello-world lambdaurl binary built the same way, at most 2x: %s, %.2fx at p50 (gateway %.2f ms, hello %.2f ms; p99 %.2f ms against %.2f ms)%s",
			verdict, g/fl, g/1000, fl/1000, lf.Init.Gateway.P99/1000, lf.Init.Hello.P99/1000, sdk))
	} else {
		goals = append(goals, "Lambda init, ratio to a hello-world lambdaurl binary: cannot judge (no hello figure)")
	}
	if v, ok := lf.Invocations["gateway_nonstream"]; ok {
		s := lf.Invocations["gateway_stream"]
		goals = append(goals, fmt.Sprintf("Lambda billed overhead after the last byte sent (record write): p50 %.2f ms, p99 %.2f ms non-streaming; p50 %.2f ms, p99 %.2f ms streaming (hello-world floor p50 %.2f ms, p99 %.2f ms); no limit is set: reported, not judged",
			v.AfterLastByte.P50/1000, v.AfterLastByte.P99/1000, s.AfterLastByte.P50/1000, s.AfterLastByte.P99/1000, h.AfterLastByte.P50/1000, h.AfterLastByte.P99/1000))
	}
	state := storeGoal(st.ReadsPerReq, st.WritesPerReq)
	goals = append(goals, fmt.Sprintf("DynamoDB calls per request on Lambda (warm happy path): reads 0 and writes <= 1: %s (%.3f reads, %.3f writes per request: %s)", state, st.ReadsPerReq, st.WritesPerReq, perOp(st.PerKind)))
	if sl := lf.Slow; sl != nil {
		state := storeGoalWithin(sl.Store.ReadsPerReq, sl.Store.WritesPerReq, 1.05)
		goals = append(goals, fmt.Sprintf("the same with the model answering in %.1f s (one request at a time per instance, as on Lambda), reads 0 and writes <= 1.05: %s (%.3f reads, %.3f writes per request over %d requests: %s)", sl.Duration.P50/1e6, state, sl.Store.ReadsPerReq, sl.Store.WritesPerReq, sl.Store.Requests, perOp(sl.Store.PerKind)))
	}
	return rows, goals
}

// storeGoal judges DynamoDB calls per request against the goal of issue
// 17: reads 0 and writes at most 1 ("**MET**", or by how much it missed).
func storeGoal(reads, writes float64) string { return storeGoalWithin(reads, writes, 1) }

// storeGoalWithin is storeGoal with writes at most maxWrites.
func storeGoalWithin(reads, writes, maxWrites float64) string {
	var miss []string
	if reads > 0 {
		miss = append(miss, fmt.Sprintf("%.3f reads per request over 0", reads))
	}
	if writes > maxWrites+1e-9 {
		miss = append(miss, fmt.Sprintf("%.3f writes per request over %g", writes-maxWrites, maxWrites))
	}
	if len(miss) == 0 {
		return "**MET**"
	}
	return "**MISSED** by " + strings.Join(miss, " and ")
}

// perOp renders calls per request by operation, e.g. "PutItem 1.000, UpdateItem 0.003".
func perOp(m map[string]float64) string {
	if len(m) == 0 {
		return "no calls"
	}
	ops := make([]string, 0, len(m))
	for k := range m {
		ops = append(ops, k)
	}
	sort.Strings(ops)
	for i, k := range ops {
		ops[i] = fmt.Sprintf("%s %.3f", k, m[k])
	}
	return strings.Join(ops, ", ")
}

func fmtAbs(v *float64, unit string, dec int, prefix string) string {
	if v == nil {
		return "–"
	}
	return prefix + strconv.FormatFloat(*v, 'f', dec, 64) + " " + unit
}

func missing(stage string, failed bool) string {
	if failed {
		return "stage " + stage + " failed: see raw/" + stage + ".log"
	}
	return "stage " + stage + " did not run"
}

func trim(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) + " s" }

// ratioGoal judges gw/floor against limit (atLeast: ratio >= limit; else
// ratio <= limit).
func ratioGoal(name string, g, fl *float64, limit float64, atLeast bool, unit string) string {
	if g == nil || fl == nil {
		return name + ": not measured"
	}
	if *fl <= 0 {
		return fmt.Sprintf("%s: cannot judge (floor figure %.1f %s ≤ 0: noise; gateway %.1f %s)", name, *fl, unit, *g, unit)
	}
	ratio := *g / *fl
	met := ratio <= limit
	if atLeast {
		met = ratio >= limit
	}
	if met {
		return fmt.Sprintf("%s: **MET** (%.2fx; gateway %.1f %s, floor %.1f %s)", name, ratio, *g, unit, *fl, unit)
	}
	by := (ratio/limit - 1) * 100
	if atLeast {
		by = (1 - ratio/limit) * 100
	}
	return fmt.Sprintf("%s: **MISSED** by %.0f%% (%.2fx against %.2fx; gateway %.1f %s, floor %.1f %s)", name, math.Abs(by), ratio, limit, *g, unit, *fl, unit)
}

func absGoal(name string, v, limit float64, unit string) string {
	if v < limit {
		return fmt.Sprintf("%s: **MET** (%.1f %s)", name, v, unit)
	}
	return fmt.Sprintf("%s: **MISSED** by %.1f %s (%.0f%%; %.1f %s)", name, v-limit, unit, (v/limit-1)*100, v, unit)
}

// sizes reads raw/sizes.tsv: binary -> bytes.
func (r *reporter) sizes() map[string]int64 {
	m := map[string]int64{}
	for _, line := range strings.Split(r.text("sizes.tsv"), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 {
			if n, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				m[f[0]] = n
			}
		}
	}
	return m
}

// goBench copies the benchmark lines of raw/gobench.txt and picks out the
// SSE relay's allocations per chunk.
func (r *reporter) goBench() {
	t := r.text("gobench.txt")
	r.p("")
	r.p("## Go benchmarks (hot paths, -benchmem)")
	r.p("")
	if t == "" {
		r.p("Not run (see raw/gobench.log).")
		return
	}
	allocs := map[string]string{}
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(t))
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "Benchmark") || strings.HasPrefix(l, "pkg:") || strings.HasPrefix(l, "FAIL") || strings.HasPrefix(l, "--- FAIL") {
			lines = append(lines, l)
		}
		if strings.HasPrefix(l, "Benchmark") {
			fs := strings.Fields(l)
			for i := 1; i < len(fs); i++ {
				if fs[i] == "allocs/op" {
					allocs[strings.Split(fs[0], "-")[0]] = fs[i-1]
				}
			}
		}
	}
	if a, ok := allocs["BenchmarkRelaySSEChunk"]; ok {
		r.p("SSE passthrough, allocations per relayed chunk: openai adapter stream (Provider.Send + Stream.Next) **%s**; whole gateway handler (adapter, failover session, SSE encoder, write+flush) **%s**; whole request through the handler: %s allocs non-streaming 200 B, %s streaming 64 chunks.",
			a, orDash(allocs["BenchmarkServerStreamChunk"]), orDash(allocs["BenchmarkServerChat/nonstream_200B"]), orDash(allocs["BenchmarkServerChat/stream_64chunks"]))
		r.p("")
	}
	r.apiBench(t)
	r.p("Raw: `raw/gobench.txt` (command in its first line).")
	r.p("")
	r.p("```")
	for _, l := range lines {
		r.p("%s", l)
	}
	r.p("```")
}

// apiSpec is one client API's section: its label, the suffix of its raw
// files and the gateway's translation paths measured on it.
type apiSpec struct {
	name, label, suffix string
	xlate               []xlatePath
}

// xlatePath is a translation path: its target name in the raw files and
// what it is.
type xlatePath struct{ key, what string }

var apis = []apiSpec{
	{name: "chat", label: "Chat Completions"},
	{name: "messages", label: "Messages", suffix: "_messages", xlate: []xlatePath{
		{"gateway_openai", "translated to an openai-compatible target"}, {"gateway_bedrock", "translated to Bedrock (ConverseStream)"}}},
	{name: "responses", label: "Responses", suffix: "_responses", xlate: []xlatePath{{"gateway_chat", "translated to a chat-only target"}}},
}

// breakdown is raw/memory_breakdown.txt's figures for one API, or what the
// file would say when it has none.
func (r *reporter) breakdown(api string) string {
	for _, l := range strings.Split(r.text("memory_breakdown.txt"), "\n") {
		if f := strings.Fields(l); len(f) == 4 && f[0] == api {
			return fmt.Sprintf("%s goroutines, %s KiB of stack and %s KiB of heap in use per stream", f[1], f[2], f[3])
		}
	}
	return "goroutines, stack and heap in use per stream"
}

// missedSee appends, to a goal that is missed, where in this report the
// profile that explains it is.
func missedSee(goal, where string) string {
	if strings.Contains(goal, "**MISSED**") {
		return goal + "; explained by: " + where
	}
	return goal
}

// apiRows renders one API's latency, streaming and memory rows and goals;
// a translation path's rows put it in the gateway column, against the
// same API's ReverseProxy.
func (r *reporter) apiRows(api apiSpec, failed func(string) bool) ([]row, []string) {
	var rows []row
	var goals []string
	pre := "[" + api.label + "] "
	pass := " passthrough"
	if api.name == "chat" {
		pass = ""
	}
	for _, size := range []string{"200B", "10KB"} {
		var lf latencyFile
		stage := "latency"
		if !r.load("latency_"+size+api.suffix+".json", &lf) {
			rows = append(rows, row{name: pre + "added latency, c=1, " + size + " body", gwText: missing(stage, failed(stage))})
			goals = append(goals, fmt.Sprintf("%sadded p50 at c=1 (%s) within %.2fx of ReverseProxy's: not measured (%s)", pre, size, latencyGoal[size], missing(stage, failed(stage))))
			continue
		}
		paths := map[string]dist{}
		for k, v := range lf.Paths {
			paths[k] = v.Latency
		}
		label := fmt.Sprintf("%d B body", lf.BodyBytes)
		for _, q := range []struct {
			name string
			fn   func(dist) float64
		}{{"p50", p50}, {"p99", p99}} {
			rows = append(rows, row{name: pre + "added latency " + q.name + ", c=1, non-streaming, " + label + pass, unit: "µs",
				gw: added(paths, gw, q.fn), rp: added(paths, rp, q.fn), tcp: added(paths, tcp, q.fn), direct: abs(paths, direct, q.fn),
				dirText: fmtAbs(abs(paths, direct, q.fn), "µs", 0, "(absolute) ")})
		}
		g, fl := added(paths, gw, p50), added(paths, rp, p50)
		prof := "the CPU profile of BenchmarkServerChat (`raw/pprof_server_bench.txt`) and the allocation sites of one request (`raw/memprofile_server_request.txt`)"
		if api.name != "chat" {
			prof = "the CPU profile of BenchmarkServerAPIs (`raw/pprof_server_apis.txt`) and the allocation sites of one " + api.label + " request (`raw/memprofile_server_" + api.name + "_nonstream_10KB.txt`)"
		}
		prof = "the gateway's CPU profile at concurrency 1 (`raw/pprof_gateway_c1" + api.suffix + ".txt`), " + prof
		goals = append(goals, missedSee(ratioGoal(fmt.Sprintf("%sadded p50 at c=1, %s: gateway within %.2fx of ReverseProxy's added latency", pre, label, latencyGoal[size]), g, fl, latencyGoal[size], false, "µs"), prof))
		cpu := func(p string) *float64 {
			if v, ok := lf.Paths[p]; ok {
				return v.CPUPerReq
			}
			return nil
		}
		rows = append(rows, row{name: pre + "CPU per request at c=1, " + label + " (proxy process; direct: the mock)", unit: "µs", decimals: 0,
			gw: cpu(gw), rp: cpu(rp), tcp: cpu(tcp), direct: cpu(direct)})
		for _, x := range api.xlate {
			if _, ok := paths[x.key]; !ok {
				continue
			}
			rows = append(rows, row{name: pre + "added latency p50, c=1, " + label + ", " + x.what + " (gateway column)", unit: "µs",
				gw: added(paths, x.key, p50), rp: added(paths, rp, p50), tcpText: "n/a", dirText: "n/a"})
		}
	}

	var stf streamFile
	if r.load("stream"+api.suffix+".json", &stf) {
		ttfb, ttfc, gap := map[string]dist{}, map[string]dist{}, map[string]dist{}
		for k, v := range stf.Paths {
			ttfb[k], ttfc[k], gap[k] = v.TTFB, v.TTFC, v.Gap
		}
		for _, q := range []struct {
			name string
			fn   func(dist) float64
		}{{"p50", p50}, {"p99", p99}} {
			rows = append(rows, row{name: pre + "streaming: added time to first data frame " + q.name, unit: "µs",
				gw: added(ttfb, gw, q.fn), rp: added(ttfb, rp, q.fn), tcp: added(ttfb, tcp, q.fn),
				dirText: fmtAbs(abs(ttfb, direct, q.fn), "µs", 0, "(absolute) ")})
		}
		if added(ttfc, gw, p50) != nil && added(ttfc, rp, p50) != nil {
			rows = append(rows, row{name: pre + "streaming: added time to first content frame p50 (the first token the user sees)", unit: "µs",
				gw: added(ttfc, gw, p50), rp: added(ttfc, rp, p50), tcp: added(ttfc, tcp, p50),
				dirText: fmtAbs(abs(ttfc, direct, p50), "µs", 0, "(absolute) ")})
		}
		rows = append(rows, row{name: pre + "streaming: added inter-frame gap p99", unit: "µs",
			gw: added(gap, gw, p99), rp: added(gap, rp, p99), tcp: added(gap, tcp, p99),
			dirText: fmtAbs(abs(gap, direct, p99), "µs", 0, "(absolute) ")})
		for _, x := range api.xlate {
			if _, ok := ttfb[x.key]; !ok {
				continue
			}
			rows = append(rows, row{name: pre + "streaming: added time to first data frame p50, " + x.what + " (gateway column)", unit: "µs",
				gw: added(ttfb, x.key, p50), rp: added(ttfb, rp, p50), tcpText: "n/a", dirText: "n/a"})
			rows = append(rows, row{name: pre + "streaming: added time to first content frame p50, " + x.what + " (gateway column)", unit: "µs",
				gw: added(ttfc, x.key, p50), rp: added(ttfc, rp, p50), tcpText: "n/a", dirText: "n/a"})
		}
		why := "the gateway holds the first data frame until the first content frame (see How it is measured; the first content frame row is the like-for-like figure) and the handler's CPU profile (`raw/pprof_server_apis.txt`, `raw/pprof_server_bench.txt`)"
		goals = append(goals, missedSee(ratioGoal(pre+"streaming: added time to first data frame p50 <= ReverseProxy's", added(ttfb, gw, p50), added(ttfb, rp, p50), 1.0, false, "µs"), why))
		goals = append(goals, missedSee(ratioGoal(pre+"streaming: added time to first data frame p99 <= ReverseProxy's", added(ttfb, gw, p99), added(ttfb, rp, p99), 1.0, false, "µs"), why))
		goals = append(goals, missedSee(ratioGoal(pre+"streaming: added inter-frame gap p99 <= ReverseProxy's", added(gap, gw, p99), added(gap, rp, p99), 1.0, false, "µs"),
			"not the relay's work per frame (BenchmarkServerStreamChunk in `raw/gobench.txt`: a few µs and no allocation per relayed frame); a p99 of gaps 20 ms apart, minus the direct path's, is set by scheduling and garbage collection on the 2 cores the 8 concurrent streams share with the load generator and the mock"))
	} else {
		rows = append(rows, row{name: pre + "streaming: added TTFB / inter-frame gap", gwText: missing("stream", failed("stream"))})
		goals = append(goals, pre+"streaming: added time to first frame and inter-frame gap <= ReverseProxy's: not measured ("+missing("stream", failed("stream"))+")")
	}

	var hf holdFile
	if r.load("hold"+api.suffix+".json", &hf) {
		get := func(p string, fn func(int64, int64, float64) float64) *float64 {
			v, ok := hf.Paths[p]
			if !ok {
				return nil
			}
			return f(fn(v.IdleRSSKB, v.PeakHWMKB, v.PerStreamKB))
		}
		n := 0
		if v, ok := hf.Paths[gw]; ok {
			n = v.Streams
		}
		per := func(_, _ int64, p float64) float64 { return p }
		idle := func(i, _ int64, _ float64) float64 { return float64(i) / 1024 }
		peak := func(_, h int64, _ float64) float64 { return float64(h) / 1024 }
		rows = append(rows, row{name: fmt.Sprintf("%smemory per open stream: (VmHWM with %d streams - idle RSS) / %d", pre, n, n), unit: "KiB", decimals: 1,
			gw: get(gw, per), rp: get(rp, per), tcp: get(tcp, per), direct: get(direct, per)})
		rows = append(rows, row{name: pre + "idle RSS (after one request)", unit: "MiB", decimals: 1,
			gw: get(gw, idle), rp: get(rp, idle), tcp: get(tcp, idle), direct: get(direct, idle)})
		rows = append(rows, row{name: fmt.Sprintf("%speak RSS (VmHWM) with %d streams", pre, n), unit: "MiB", decimals: 1,
			gw: get(gw, peak), rp: get(rp, peak), tcp: get(tcp, peak), direct: get(direct, peak)})
		goals = append(goals, missedSee(ratioGoal(pre+"memory per stream <= ReverseProxy's", get(gw, per), get(rp, per), 1.0, false, "KiB"),
			"what one open stream holds (`raw/memory_breakdown.txt`: "+r.breakdown(api.name)+
				") and the allocation sites of a stream (`raw/memprofile_server_messages_to_bedrock_stream_64chunks.txt`, `raw/memprofile_relay_chunk.txt`)"))
		if api.name == "chat" {
			goals = append(goals, missedSee(ratioGoal("idle RSS <= 2x ReverseProxy's", get(gw, idle), get(rp, idle), 2.0, false, "MiB"),
				"the heap at rest and resident memory by mapping (`raw/pprof_gateway_idle_heap.txt`): file-backed pages of the binary against the anonymous heap"))
		}
	} else {
		rows = append(rows, row{name: pre + "memory per open stream", gwText: missing("memory", failed("memory"))})
		goals = append(goals, pre+"memory per stream <= ReverseProxy's: not measured ("+missing("memory", failed("memory"))+")")
	}
	return rows, goals
}

// latencyGoal is issue 27's limit on the gateway's added p50 at c=1 as a
// multiple of the ReverseProxy's, per body size.
var latencyGoal = map[string]float64{"200B": 1.0, "10KB": 1.1}

// hotSpots are the functions whose cumulative share of the gateway's CPU
// under load the report picks out of pprof -top -cum.
var hotSpots = []struct{ fn, what string }{
	{"github.com/llmgw/llmgw/pkg/server.(*Handler).ServeHTTP", "the whole handler"},
	{"github.com/llmgw/llmgw/pkg/chatwire.Parse", "request validation (chatwire.Parse)"},
	{"github.com/llmgw/llmgw/pkg/failover.(*Router).Open", "chain walk and upstream call until the first content (failover.Router.Open)"},
	{"github.com/llmgw/llmgw/pkg/server.(*exchange).relay", "relaying the response (server relay)"},
	{"github.com/llmgw/llmgw/pkg/usage.(*Recorder).Record", "usage record written synchronously (usage.Recorder.Record: Lambda's path; locally only when the queue is full)"},
	{"github.com/llmgw/llmgw/pkg/usage/asyncrecorder.(*Recorder).Record", "usage record queued on the request path (asyncrecorder.Recorder.Record)"},
	{"github.com/llmgw/llmgw/pkg/usage.(*Recorder).RecordBatch", "usage records written in batches, off the request path (usage.Recorder.RecordBatch)"},
	{"go.etcd.io/bbolt.(*Tx).Commit", "of which the embedded store's commit (bbolt Tx.Commit)"},
	{"syscall.Fdatasync", "of which fdatasync"},
	{"log/slog.(*Logger).LogAttrs", "log lines through slog"},
	{"github.com/llmgw/llmgw/pkg/requestlog.Write", "the request log line (requestlog.Write)"},
	{"runtime.gcBgMarkWorker", "garbage collector (background mark)"},
}

func (r *reporter) profiles() {
	r.p("")
	r.p("## CPU profiles (top of `go tool pprof -top`)")
	if cum := r.text("pprof_gateway_saturation_cum.txt"); cum != "" {
		r.p("")
		r.p("Where the gateway process's CPU goes under the saturation load (cumulative share of all samples, from `raw/pprof_gateway_saturation_cum.txt`):")
		r.p("")
		r.p("| function | what | cum |")
		r.p("|---|---|---:|")
		for _, h := range hotSpots {
			for _, l := range strings.Split(cum, "\n") {
				f := strings.Fields(l)
				if len(f) >= 6 && f[len(f)-1] == h.fn {
					r.p("| `%s` | %s | %s |", h.fn[strings.LastIndexByte(h.fn, '/')+1:], h.what, f[4])
					break
				}
			}
		}
	}
	for _, p := range []struct{ file, title string }{
		{"pprof_gateway_saturation.txt", "gateway process under constant load at its saturation rate (gwprof: the same app.RunLocal plus a loopback pprof listener)"},
		{"pprof_gateway_c1.txt", "gateway process at concurrency 1, Chat Completions (the latency loop of goal 1, gwprof; cumulative)"},
		{"pprof_gateway_c1_messages.txt", "gateway process at concurrency 1, Messages passthrough (cumulative)"},
		{"pprof_gateway_c1_responses.txt", "gateway process at concurrency 1, Responses passthrough (cumulative)"},
		{"memory_breakdown.txt", "what one open stream holds in the gateway, per API (gwprof with the memory stage's streams held; the Go runtime's figures, minus those at rest)"},
		{"pprof_server_bench.txt", "BenchmarkServerChat (go test -cpuprofile)"},
		{"pprof_server_apis.txt", "BenchmarkServerAPIs: Messages and Responses, passthrough and translated (CPU)"},
		{"memprofile_server_messages_nonstream_10KB.txt", "allocation sites of one Messages passthrough request, 10 KB body (every allocation sampled)"},
		{"memprofile_server_responses_nonstream_10KB.txt", "allocation sites of one Responses passthrough request, 10 KB body (every allocation sampled)"},
		{"memprofile_server_messages_to_bedrock_stream_64chunks.txt", "allocation sites of a Messages stream translated to Bedrock ConverseStream, 64 frames (every allocation sampled)"},
		{"pprof_gateway_idle_heap.txt", "the gateway's heap at rest after one request (what idle RSS is made of): in-use bytes by allocation site, then the process's and the runtime's memory figures"},
		{"cold_inittrace.txt", "package init at start-up (GODEBUG=inittrace=1), slowest first"},
	} {
		t := r.text(p.file)
		r.p("")
		r.p("%s — `raw/%s`:", p.title, p.file)
		r.p("")
		if t == "" {
			r.p("not produced in this run.")
			continue
		}
		ls := strings.Split(t, "\n")
		r.p("```")
		for i, l := range ls {
			if i >= 40 {
				break
			}
			r.p("%s", l)
		}
		r.p("```")
	}
}

func (r *reporter) method() {
	r.p("")
	r.p("## How it is measured")
	r.p("")
	for _, s := range []string{
		"Everything runs on 127.0.0.1 in one run of `scripts/bench.sh`: the mock upstream (`scripts/bench/mockupstream`, pkg/fakellm's Handler, keep-alive on), the floor proxies (`scripts/bench/floorproxy`: `httputil.ReverseProxy` and a raw TCP relay that io.Copy's both ways, i.e. splice(2)), the gateway binary built from `functions/gateway` (local mode, one route per path measured, every target at the mock), and the load generator (`scripts/bench/loadgen`).",
		"Three client APIs, each measured against the ReverseProxy on the same API's path in the same run: Chat Completions (`/v1/chat/completions`, route `bench`: an `openai`-kind provider with `apis: [chat, responses]`), Messages (`/v1/messages`, route `bench-messages`: an `anthropic`-kind provider, passthrough) and Responses (`/v1/responses`, route `bench`, passthrough). The mock answers each in its real wire format (pkg/fakellm: Chat Completions SSE ending in [DONE]; Messages' named events message_start ... message_stop; Responses' typed events with sequence numbers, response.created ... response.completed) and speaks Bedrock's Converse and ConverseStream (binary event-stream frames with valid CRCs, the AWS SDK's encoder). Translation paths, in the gateway column of their own rows against the same API's ReverseProxy: Messages to a chat-only `openai` target (`bench-msg-openai`), Messages to Bedrock ConverseStream (`bench-msg-bedrock`, a non-Anthropic model) and Responses to a chat-only target (`bench-resp-chat`). The load generator's stream client knows each API's last frame and its content frames (the chat chunk with content text, content_block_delta, response.output_text.delta).",
		"Non-streaming load is generated by vegeta v12 used as a library. Latency at concurrency 1 is vegeta at rate 0 with one worker (a closed loop); the four paths are interleaved round by round so that a noisy neighbour hits all of them alike; percentiles are exact (nearest rank over every sample), not vegeta's estimates.",
		"Saturation: for each path, constant-rate vegeta steps, doubling from the start rate, then bisecting to within 5%; a step passes with zero errors, p99 under the limit and at least 95% of the rate achieved; a failing step is repeated once before it is believed (the machine is shared). The load generator and the mock share the 2 cores with the proxy, so the figure is the system's, and it is the same for every path. CPU per request is utime+stime of the proxy process from /proc/<pid>/stat (10 ms ticks) over the step.",
		"Streaming figures come from loadgen's own SSE client (vegeta does not read SSE frames): concurrent streams, bounded count and time, each frame timestamped when its blank line is read. The first data frame is the role chunk: a proxy relays it at once, while the gateway holds it until the first content chunk (which the mock sends right after, in its own write), because until content has arrived the gateway may still fail over silently; so the gateway's first data frame waits for one more upstream frame. The first content frame (the first chunk with content text: the first token a user sees) is therefore shown too, the same frame for every path.",
		"Memory: fresh proxy processes, one warm-up request, idle RSS read, then N streams opened against a slow mock and held; per stream = (VmHWM - idle VmRSS) / N from /proc/<pid>/status.",
		"Cold start: a bounded Go loop starts the binary N times and times exec -> first 200 on GET /healthz (the floor proxies answer it through the mock); hyperfine runs the same probe as a cross-check.",
		"Failover: a second gateway with routes whose primary is a loopback port with nothing listening (attempts: 1; `breaker: closed` for the refused case so every request really dials it; automatic breaker warmed until open for the breaker case, cooldown 10m). Attempts 1 isolates the failover mechanics: with the default 2 attempts a full-jitter backoff (mean 50 ms at backoff_base 100ms) would be added, bounded by the retry budget.",
		"The ReverseProxy floor reads the request body fully before forwarding (like the gateway): a streaming request body makes ReverseProxy cut a few streamed responses under load (golang/go#40747).",
		"The gateway runs as shipped in local mode: its default embedded store (a bbolt file in the run's temp dir), with the usage record of every request queued for the background batch writer (pkg/usage/asyncrecorder: one store transaction per batch; flushed on shutdown), and its JSON request log line written to a file (stderr redirected). Those costs are included; `BenchmarkServerChat` (the handler without a store) shows the proxy core alone.",
		"DynamoDB calls per request: a gateway with `-store dynamodb` against dynalite (the emulator from npm) behind floorproxy's counting mode, which counts requests by X-Amz-Target; warm-up first, then N requests at concurrency 1, counts read before and after (with a pause for background writes). Writes that are not per request show up as fractions: the shared breaker flushes a target's outcome counts in the background at most once a second (breaker.DefaultFlushInterval), so its UpdateItems per request fall as the request rate rises (see the seconds and counts in raw/store.json).",
		"Lambda: `scripts/bench/lambdabench` runs the real bootstrap (`functions/gateway`, built like the deploy build: CGO_ENABLED=0, -tags lambda.norpc, -trimpath, -ldflags='-s -w', for this machine's architecture) under pkg/lambdaemu's Runtime API emulator, with its config in an in-process SSM server (pkg/ssmconfig/ssmtest: one route `bench` to an `openai`-kind provider at the mock, one team with the sample events' key) and its table in dynalite behind the counting proxy; the floor is `scripts/bench/lambdahello`, a hello-world lambdaurl binary built the same way. Init is exec -> the function's first GET /invocation/next (the emulator's OnNext hook), each binary started N times, interleaved, on a fresh emulator. Then on warm processes, invocations at concurrency 1, interleaved (the events/ chat events, non-streaming and streaming, and hello): the time after the last byte is the client's last body read with data -> the function's next GET /invocation/next, i.e. the handler returned (what Lambda bills after the response is complete; the gateway writes the usage record there, one PutItem). DynamoDB calls are the counting proxy's counts over the measured window (with a pause before and after), split by the item's key kind by lambdabench's own pass-through proxy; SSM calls are the fake server's. A second warm window does the same on a route whose mock answers after 1.2 s, longer than the breaker's and the retry budget's flush intervals (1 s): on Lambda an instance serves one request at a time and model calls last seconds; a target that only succeeds is quiet for the breaker (one flush per 30 s) and a provider without retries for the retry budget (one flush per 5 min; docs/state-model.md, Quiet targets), instead of one flush per request. Every binary runs with the Go runtime settings the stack gives the gateway function (deployment.GoRuntimeEnv: GOGC=400, GOMEMLIMIT at 3/4 of the default memory); the fourth init floor, scripts/bench/lambdarequiredsdk, links only the SDK clients the project must use. Loopback: a real DynamoDB PutItem is a few ms more, and Lambda's own init and CPU share differ.",
	} {
		r.p("- %s", s)
	}
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

func cmdOut(name string, args ...string) string {
	b, err := exec.Command(name, args...).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func lscpuModel() string {
	for _, l := range strings.Split(cmdOut("lscpu"), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "Model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func memTotal() string {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "MemTotal:") {
			f := strings.Fields(l)
			if len(f) >= 2 {
				kb, _ := strconv.ParseFloat(f[1], 64)
				return fmt.Sprintf("%.1f GiB", kb/(1<<20))
			}
		}
	}
	return ""
}

// apiBench renders BenchmarkServerAPIs from gobench.txt: per client API
// path, allocations per request and per relayed frame, and CPU per request.
func (r *reporter) apiBench(t string) {
	type cells struct{ ns, allocs, frame string }
	got := map[string]*cells{}
	var order []string
	for _, l := range strings.Split(t, "\n") {
		fs := strings.Fields(l)
		if len(fs) < 3 || !strings.HasPrefix(fs[0], "BenchmarkServerAPIs/") {
			continue
		}
		name := strings.TrimPrefix(fs[0], "BenchmarkServerAPIs/")
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			name = name[:i]
		}
		path, variant, _ := strings.Cut(name, "/")
		c := got[path]
		if c == nil {
			c = &cells{}
			got[path] = c
			order = append(order, path)
		}
		for i := 1; i < len(fs); i++ {
			switch fs[i] {
			case "ns/op":
				if variant == "nonstream_200B" {
					c.ns = fs[i-1]
				}
			case "allocs/op":
				c.allocs += variant + " " + fs[i-1] + "; "
			case "allocs/relayed-frame":
				c.frame = fs[i-1]
			}
		}
	}
	if len(order) == 0 {
		return
	}
	r.p("Messages and Responses through the whole handler (BenchmarkServerAPIs: upstream bytes recorded in each wire format, answered in memory); allocs/relayed-frame is the marginal allocations of one more relayed frame (a 72-frame stream minus an 8-frame one, over 64):")
	r.p("")
	r.p("| path | allocs per request | allocs per relayed frame | ns per request, 200 B non-streaming |")
	r.p("|---|---|---:|---:|")
	for _, p := range order {
		c := got[p]
		r.p("| %s | %s | %s | %s |", p, strings.TrimSuffix(c.allocs, "; "), orDash(c.frame), orDash(c.ns))
	}
	r.p("")
}
