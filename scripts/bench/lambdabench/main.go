// Command lambdabench measures the gateway's Lambda figures with the real
// bootstrap binary under pkg/lambdaemu's Runtime API emulator, against a
// hello-world lambdaurl binary built the same way (scripts/bench/lambdahello):
//
//   - init: process start -> the first GET .../invocation/next (ready for
//     the first invocation: config read from SSM, clients created), n-init
//     times each, interleaved; then that process's first invocation (a
//     non-streaming chat), where any work put off past init would show.
//     With -sdk-hello, a third binary joins the interleave: the hello-world
//     with the AWS SDK packages the bootstrap links
//     (scripts/bench/lambdasdkhello), the floor of what Go's package
//     initialization of the SDK costs before main; with
//     -required-sdk-hello, a fourth: the hello-world with only the SDK
//     clients the project must use (scripts/bench/lambdarequiredsdk);
//   - after the last byte: for each invocation of a warm process, the time
//     from the last body byte the client reads to the function's next GET
//     .../invocation/next (its handler returned: on Lambda, the billed time
//     after the response is complete; for the gateway, the usage record
//     write), plus the whole invocation (Invoke -> next GET next);
//   - store calls: DynamoDB calls per request on the warm happy path, from
//     the counting proxy's /__bench/counts (per operation) and from its own
//     pass-through proxy (per operation and key kind), and SSM calls per
//     request during the same window.
//
// The config is served by an in-process SSM server (pkg/ssmconfig/ssmtest)
// under /llmgw/bench/config: one route, bench, to an openai-kind provider at
// the mock upstream, and one team holding the example key of events/.
//
//	lambdabench -bootstrap bootstrap -hello hello -dynamodb http://127.0.0.1:8001 \
//	    -counts http://127.0.0.1:8001/__bench/counts -upstream http://127.0.0.1:9000 -out lambda.json
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"maps"
	"math"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/llmgw/llmgw/scripts/bench/internal/dist"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/llmgw/llmgw/pkg/deployment"
	"github.com/llmgw/llmgw/pkg/lambdaemu"
	"github.com/llmgw/llmgw/pkg/ssmconfig/ssmtest"
	"github.com/llmgw/llmgw/pkg/store/dynamo"
)

// stage is the LLMGW_STAGE of the benchmark's function (and its SSM path).
const stage = "bench"

// exampleKeyHash is the sha256 of "llmgw_example_team_key_not_real", the
// team key the sample events in events/ carry.
const exampleKeyHash = "f3542a6855d7414ac13345c6e1e6766312f17642aa8332ade985f9765704ea07"

// dynamoReads and dynamoWrites classify DynamoDB operations (as in loadgen).
var (
	dynamoReads  = []string{"GetItem", "BatchGetItem", "Query", "Scan", "TransactGetItems"}
	dynamoWrites = []string{"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"}
)

func main() {
	o := options{}
	flag.StringVar(&o.bootstrap, "bootstrap", "", "the gateway's Lambda bootstrap binary")
	flag.StringVar(&o.hello, "hello", "", "the hello-world lambdaurl binary (scripts/bench/lambdahello)")
	flag.StringVar(&o.sdkHello, "sdk-hello", "", "optional: the hello-world with the AWS SDK packages the bootstrap links (scripts/bench/lambdasdkhello)")
	flag.StringVar(&o.requiredSDK, "required-sdk-hello", "", "optional: the hello-world with only the SDK clients the project must use (scripts/bench/lambdarequiredsdk)")
	flag.StringVar(&o.dynamodb, "dynamodb", "", "DynamoDB endpoint URL (the counting proxy in front of dynalite)")
	flag.StringVar(&o.counts, "counts", "", "the counting proxy's /__bench/counts URL")
	flag.StringVar(&o.upstream, "upstream", "", "the mock upstream's base URL (http://host:port)")
	flag.StringVar(&o.events, "events", "events", "directory of the sample Function URL events")
	flag.StringVar(&o.table, "table", "llmgw-bench-lambda", "DynamoDB table (created when missing)")
	flag.StringVar(&o.slowUpstream, "slow-upstream", "", "optional: a mock upstream slower than 1 s (route bench-slow), for a second warm window")
	flag.IntVar(&o.nSlow, "n-slow", 5, "measured invocations per kind (non-streaming, streaming) on the slow upstream")
	flag.IntVar(&o.nInit, "n-init", 20, "cold starts per binary")
	flag.IntVar(&o.n, "n", 200, "measured invocations per kind (non-streaming, streaming, hello) on warm processes")
	flag.IntVar(&o.warmup, "warmup", 20, "unmeasured invocations per kind first")
	flag.DurationVar(&o.settle, "settle", time.Second, "pause before and after the measured window (background writes)")
	out := flag.String("out", "-", "output JSON file")
	flag.Parse()
	if o.bootstrap == "" || o.hello == "" || o.dynamodb == "" || o.counts == "" || o.upstream == "" {
		log.Fatal("lambdabench: need -bootstrap, -hello, -dynamodb, -counts and -upstream")
	}
	rep, err := run(context.Background(), o)
	if err != nil {
		log.Fatalf("lambdabench: %v", err)
	}
	b, _ := json.MarshalIndent(rep, "", "  ")
	b = append(b, '\n')
	if *out == "-" {
		os.Stdout.Write(b)
		return
	}
	if err := os.WriteFile(*out, b, 0o644); err != nil {
		log.Fatal(err)
	}
}

type options struct {
	bootstrap, hello, sdkHello, dynamodb, counts, upstream, events, table string
	slowUpstream, requiredSDK                                             string
	nInit, n, warmup, nSlow                                               int
	settle                                                                time.Duration
}

// Dist summarises a sample, in microseconds (pkg dist: one shape for
// every bench tool).
type Dist = dist.Dist

var (
	distOf = dist.Of
	us     = dist.US
)

// Report is lambdabench's output (raw/lambda.json).
type Report struct {
	Mode        string                `json:"mode"`
	Status      string                `json:"status"`
	Init        InitResult            `json:"init"`
	Invocations map[string]*InvResult `json:"invocations"`
	Order       []string              `json:"order"`
	Store       StoreResult           `json:"dynamodb_warm"`
	SSM         map[string]float64    `json:"ssm_calls_per_request_by_operation"`
	SSMCalls    map[string]int64      `json:"ssm_calls_in_window"`
	Refresh     string                `json:"config_refresh"`
	Slow        *SlowResult           `json:"slow_upstream,omitempty"`
	Settings    map[string]any        `json:"settings"`
}

// InitResult is the cold start of both binaries.
type InitResult struct {
	Runs    int  `json:"runs"`
	Gateway Dist `json:"gateway_start_to_ready"`
	Hello   Dist `json:"hello_start_to_ready"`
	// GatewayFirst and HelloFirst are the first invocation after init
	// (Invoke -> the next GET next).
	GatewayFirst Dist    `json:"gateway_first_invocation"`
	HelloFirst   Dist    `json:"hello_first_invocation"`
	RatioP50     float64 `json:"ratio_p50"`
	RatioMean    float64 `json:"ratio_mean"`
	// SDKHello is the init of the hello-world with the AWS SDK packages
	// linked (-sdk-hello), and RatioSDKP50 the gateway's p50 over its p50.
	SDKHello    *Dist   `json:"sdk_hello_start_to_ready,omitempty"`
	RatioSDKP50 float64 `json:"ratio_to_sdk_hello_p50,omitempty"`
	// RequiredSDKHello is the init of the hello-world with only the SDK
	// clients the project must use linked (-required-sdk-hello).
	RequiredSDKHello *Dist `json:"required_sdk_hello_start_to_ready,omitempty"`
	// DynamoPerInit and SSMPerInit are the gateway's calls per cold start:
	// init and the first invocation (whose usage record is one PutItem).
	DynamoPerInit map[string]float64 `json:"dynamodb_calls_per_gateway_cold_start"`
	SSMPerInit    map[string]float64 `json:"ssm_calls_per_gateway_cold_start"`
}

// InvResult is one kind of warm invocation.
type InvResult struct {
	Invocations int `json:"invocations"`
	// Duration is Invoke -> the function's next GET next (what Lambda bills).
	Duration Dist `json:"duration"`
	// FirstByte is Invoke -> the response's prelude (status and headers).
	FirstByte Dist `json:"first_byte"`
	// AfterLastByte is the last body byte read by the client -> the next
	// GET next: billed time after the response was complete.
	AfterLastByte Dist `json:"after_last_byte"`
	// EOFAfterLastByte is the last body byte -> the end of the body.
	EOFAfterLastByte Dist `json:"eof_after_last_byte"`
}

// SlowResult is the warm window on the slow upstream (-slow-upstream).
type SlowResult struct {
	Store         StoreResult      `json:"dynamodb"`
	SSMCalls      map[string]int64 `json:"ssm_calls_in_window"`
	Duration      Dist             `json:"duration"`
	AfterLastByte Dist             `json:"after_last_byte"`
}

// StoreResult is the DynamoDB calls of the warm window.
type StoreResult struct {
	Requests     int                `json:"requests"`
	Seconds      float64            `json:"seconds"`
	PerOp        map[string]float64 `json:"calls_per_request_by_operation"`
	ReadsPerReq  float64            `json:"reads_per_request"`
	WritesPerReq float64            `json:"writes_per_request"`
	OtherPerReq  float64            `json:"other_per_request"`
	// PerKind splits the calls by operation and the kind of item (the
	// partition key's first component: usage, breaker, config, ...).
	PerKind map[string]float64 `json:"calls_per_request_by_operation_and_item"`
	// Counted is what the pass-through proxy saw, to check against PerOp.
	Counted map[string]int64 `json:"calls_in_window_seen_by_lambdabench"`
}

// gatewayConfig is the function's config in SSM.
// With slow set, a second route, bench-slow, to a provider there.
func gatewayConfig(upstream, slow string) string {
	c := fmt.Sprintf(`providers:
  mock:
    kind: openai
    base_url: %s/v1
`, strings.TrimSuffix(upstream, "/"))
	if slow != "" {
		c += fmt.Sprintf(`  slow:
    kind: openai
    base_url: %s/v1
`, strings.TrimSuffix(slow, "/"))
	}
	c += `routes:
  bench:
    targets:
      - {provider: mock, model: bench-model}
`
	if slow != "" {
		c += `  bench-slow:
    targets:
      - {provider: slow, model: bench-model}
`
	}
	return c + fmt.Sprintf(`teams:
  bench:
    keys: [{id: example, sha256: %s}]
`, exampleKeyHash)
}

func run(ctx context.Context, o options) (*Report, error) {
	ssm := ssmtest.New()
	defer ssm.Close()
	ssm.Put(deployment.ConfigPath(stage)+"/00-bench", "String", gatewayConfig(o.upstream, o.slowUpstream))

	// Every DynamoDB call of the function passes through kinds (its own
	// tally by item kind) on its way to the counting proxy.
	kinds, err := startKindCounter(o.dynamodb)
	if err != nil {
		return nil, err
	}
	defer kinds.Close()
	ddb := dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String(o.dynamodb),
		Credentials: credentials.NewStaticCredentialsProvider("bench", "bench", "")})
	if err := dynamo.New(ddb, o.table).EnsureTable(ctx); err != nil {
		return nil, fmt.Errorf("table %s: %w", o.table, err)
	}
	common := []string{"PATH=" + os.Getenv("PATH"), "AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=bench", "AWS_SECRET_ACCESS_KEY=bench",
		"AWS_EC2_METADATA_DISABLED=true", "AWS_LAMBDA_FUNCTION_NAME=llmgw-bench-gateway", deployment.EnvStage + "=" + stage}
	// The Go runtime's variables the stack sets on the gateway function
	// (GOGC, GOMEMLIMIT at the default memory size), on every binary: the
	// floors run in the same environment.
	for _, k := range slices.Sorted(maps.Keys(deployment.GoRuntimeEnv(deployment.DefaultGatewayMemoryMB))) {
		common = append(common, k+"="+deployment.GoRuntimeEnv(deployment.DefaultGatewayMemoryMB)[k])
	}
	gwEnv := append(slices.Clip(common), deployment.EnvConfigPath+"="+deployment.ConfigPath(stage), "AWS_ENDPOINT_URL_SSM="+ssm.URL,
		deployment.EnvTable+"="+o.table, "AWS_ENDPOINT_URL_DYNAMODB="+kinds.URL)
	gw := binary{name: "gateway", path: o.bootstrap, env: gwEnv}
	hello := binary{name: "hello", path: o.hello, env: common}
	starts := []binary{gw, hello}
	if o.sdkHello != "" {
		starts = append(starts, binary{name: "sdk-hello", path: o.sdkHello, env: common})
	}
	if o.requiredSDK != "" {
		starts = append(starts, binary{name: "required-sdk-hello", path: o.requiredSDK, env: common})
	}

	rep := &Report{Mode: "lambda", Status: "measured", Invocations: map[string]*InvResult{}, Refresh: deployment.DefaultConfigRefresh.String(),
		Settings: map[string]any{"n_init": o.nInit, "n": o.n, "n_slow": o.nSlow, "warmup": o.warmup, "settle": o.settle.String(), "table": o.table,
			"config": "SSM " + deployment.ConfigPath(stage) + ": one route to an openai-kind provider at the mock, one team with the example key"}}

	firstEvent, err := loadEvent(filepath.Join(o.events, "function-url-chat.json"), "bench")
	if err != nil {
		return nil, err
	}
	// Init, interleaved. The first start of each is not kept (page cache).
	var gwInit, helloInit, sdkInit, reqInit, gwFirst, helloFirst []time.Duration
	ssmBefore, kindsBefore := ssmCounts(ssm), kinds.snapshot()
	for i := -1; i < o.nInit; i++ {
		for _, b := range starts {
			want := `"chat.completion"`
			if b.name != "gateway" {
				want = "hello, world"
			}
			d, first, err := b.coldStart(ctx, firstEvent, want)
			if err != nil {
				return nil, err
			}
			if i < 0 {
				continue
			}
			switch b.name {
			case "gateway":
				gwInit, gwFirst = append(gwInit, d), append(gwFirst, first)
			case "hello":
				helloInit, helloFirst = append(helloInit, d), append(helloFirst, first)
			case "sdk-hello":
				sdkInit = append(sdkInit, d)
			default:
				reqInit = append(reqInit, d)
			}
		}
	}
	rep.Init = InitResult{Runs: o.nInit, Gateway: distOf(gwInit), Hello: distOf(helloInit), GatewayFirst: distOf(gwFirst), HelloFirst: distOf(helloFirst),
		SSMPerInit: perN(diff(ssmBefore, ssmCounts(ssm)), o.nInit+1), DynamoPerInit: perN(diff(kindsBefore, kinds.snapshot()), o.nInit+1)}
	if rep.Init.Hello.P50 > 0 && rep.Init.Hello.Mean > 0 {
		rep.Init.RatioP50 = round3(rep.Init.Gateway.P50 / rep.Init.Hello.P50)
		rep.Init.RatioMean = round3(rep.Init.Gateway.Mean / rep.Init.Hello.Mean)
	}
	fmt.Fprintf(os.Stderr, "lambda init p50: gateway %.2f ms, hello %.2f ms, ratio %.2fx; first invocation p50: gateway %.2f ms, hello %.2f ms\n",
		rep.Init.Gateway.P50/1000, rep.Init.Hello.P50/1000, rep.Init.RatioP50, rep.Init.GatewayFirst.P50/1000, rep.Init.HelloFirst.P50/1000)
	if len(sdkInit) > 0 {
		d := distOf(sdkInit)
		rep.Init.SDKHello = &d
		if d.P50 > 0 {
			rep.Init.RatioSDKP50 = round3(rep.Init.Gateway.P50 / d.P50)
		}
		fmt.Fprintf(os.Stderr, "lambda init p50: hello with the AWS SDK packages linked %.2f ms (%.2fx hello); gateway %.2fx that\n",
			d.P50/1000, d.P50/rep.Init.Hello.P50, rep.Init.RatioSDKP50)
	}
	if len(reqInit) > 0 {
		d := distOf(reqInit)
		rep.Init.RequiredSDKHello = &d
		fmt.Fprintf(os.Stderr, "lambda init p50: hello with only the required SDK clients linked %.2f ms (%.2fx hello)\n", d.P50/1000, d.P50/rep.Init.Hello.P50)
	}

	// Warm invocations, interleaved: non-streaming, streaming, hello.
	gwProc, err := gw.start(ctx)
	if err != nil {
		return nil, err
	}
	defer gwProc.stop()
	helloProc, err := hello.start(ctx)
	if err != nil {
		return nil, err
	}
	defer helloProc.stop()
	var kindsList []kind
	for _, k := range []struct{ name, file, want string }{
		{"gateway_nonstream", "function-url-chat.json", `"chat.completion"`},
		{"gateway_stream", "function-url-chat-stream.json", "data: [DONE]"},
		{"hello", "function-url-chat.json", "hello, world"},
	} {
		ev, err := loadEvent(filepath.Join(o.events, k.file), "bench")
		if err != nil {
			return nil, err
		}
		p := gwProc
		if k.name == "hello" {
			p = helloProc
		}
		kindsList = append(kindsList, kind{k.name, p, ev, k.want})
		rep.Order = append(rep.Order, k.name)
	}
	samples := map[string]*[4][]time.Duration{}
	for _, k := range kindsList {
		samples[k.name] = &[4][]time.Duration{}
	}
	round := func(measure bool) error {
		for _, k := range kindsList {
			s, err := k.p.invoke(ctx, k.event, k.want)
			if err != nil {
				return fmt.Errorf("%s: %w", k.name, err)
			}
			if measure {
				m := samples[k.name]
				m[0] = append(m[0], s.duration)
				m[1] = append(m[1], s.firstByte)
				m[2] = append(m[2], s.afterLast)
				m[3] = append(m[3], s.eofAfterLast)
			}
		}
		return nil
	}
	for i := 0; i < o.warmup; i++ {
		if err := round(false); err != nil {
			return nil, err
		}
	}
	requests := 2 * o.n // the gateway's: non-streaming and streaming
	st, ssmCalls, err := measureWindow(o, kinds, ssm, requests, func() error {
		for i := 0; i < o.n; i++ {
			if err := round(true); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, k := range kindsList {
		m := samples[k.name]
		rep.Invocations[k.name] = &InvResult{Invocations: len(m[0]), Duration: distOf(m[0]), FirstByte: distOf(m[1]),
			AfterLastByte: distOf(m[2]), EOFAfterLastByte: distOf(m[3])}
		r := rep.Invocations[k.name]
		fmt.Fprintf(os.Stderr, "lambda %-18s after last byte p50 %.3f ms p99 %.3f ms, duration p50 %.3f ms\n", k.name,
			r.AfterLastByte.P50/1000, r.AfterLastByte.P99/1000, r.Duration.P50/1000)
	}
	rep.Store = st
	rep.SSMCalls = ssmCalls
	rep.SSM = perN(rep.SSMCalls, requests)
	fmt.Fprintf(os.Stderr, "lambda dynamodb per request: %.3f reads, %.3f writes (%v); ssm calls in the window: %v\n",
		st.ReadsPerReq, st.WritesPerReq, st.PerKind, rep.SSMCalls)

	if o.slowUpstream == "" {
		return rep, nil
	}
	// The same warm process on a route whose upstream takes longer than the
	// shared state's flush intervals to answer: a Lambda instance serves
	// one request at a time, and model calls last seconds.
	var slow []kind
	for _, k := range []struct{ name, file, want string }{
		{"gateway_nonstream_slow", "function-url-chat.json", `"chat.completion"`},
		{"gateway_stream_slow", "function-url-chat-stream.json", "data: [DONE]"},
	} {
		ev, err := loadEvent(filepath.Join(o.events, k.file), "bench-slow")
		if err != nil {
			return nil, err
		}
		slow = append(slow, kind{k.name, gwProc, ev, k.want})
	}
	var durations, afterLast []time.Duration
	slowRound := func(measure bool) error {
		for _, k := range slow {
			s, err := k.p.invoke(ctx, k.event, k.want)
			if err != nil {
				return fmt.Errorf("%s: %w", k.name, err)
			}
			if measure {
				durations, afterLast = append(durations, s.duration), append(afterLast, s.afterLast)
			}
		}
		return nil
	}
	if err := slowRound(false); err != nil {
		return nil, err
	}
	sst, sssm, err := measureWindow(o, kinds, ssm, 2*o.nSlow, func() error {
		for i := 0; i < o.nSlow; i++ {
			if err := slowRound(true); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	rep.Slow = &SlowResult{Store: sst, SSMCalls: sssm, Duration: distOf(durations), AfterLastByte: distOf(afterLast)}
	fmt.Fprintf(os.Stderr, "lambda slow upstream (duration p50 %.0f ms): dynamodb per request %.3f reads, %.3f writes (%v); after last byte p50 %.3f ms\n",
		rep.Slow.Duration.P50/1000, sst.ReadsPerReq, sst.WritesPerReq, sst.PerKind, rep.Slow.AfterLastByte.P50/1000)
	return rep, nil
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

func diff(before, after map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

func perN(m map[string]int64, n int) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		out[k] = round3(float64(v) / float64(n))
	}
	return out
}

func ssmCounts(s *ssmtest.Server) map[string]int64 {
	out := map[string]int64{}
	for _, op := range []string{"GetParametersByPath", "GetParameter", "PutParameter"} {
		if c := s.Count(op); c > 0 {
			out[op] = c
		}
	}
	return out
}

func fetchCounts(u string) (map[string]int64, error) {
	resp, err := http.Get(u)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	m := map[string]int64{}
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		return nil, fmt.Errorf("%s: %w", u, err)
	}
	return m, nil
}

// loadEvent reads a sample event and points its request at route.
func loadEvent(path, route string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var ev map[string]any
	if err := json.Unmarshal(b, &ev); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	body, _ := ev["body"].(string)
	if !strings.Contains(body, `"model":"demo"`) {
		return nil, fmt.Errorf("%s: body has no \"model\":\"demo\"", path)
	}
	ev["body"] = strings.Replace(body, `"model":"demo"`, `"model":`+strconv.Quote(route), 1)
	return json.Marshal(ev)
}

// kind is one kind of invocation: the event, its process, the text its
// answer must hold.
type kind struct {
	name  string
	p     *process
	event []byte
	want  string
}

// measureWindow runs body between two readings of the call counts (each
// after a pause of o.settle, for background writes) and returns the
// DynamoDB calls per request and the SSM calls of the window.
func measureWindow(o options, kinds *kindCounter, ssm *ssmtest.Server, requests int, body func() error) (StoreResult, map[string]int64, error) {
	time.Sleep(o.settle)
	before, err := fetchCounts(o.counts)
	if err != nil {
		return StoreResult{}, nil, err
	}
	ssmBefore, kindsBefore := ssmCounts(ssm), kinds.snapshot()
	t0 := time.Now()
	if err := body(); err != nil {
		return StoreResult{}, nil, err
	}
	elapsed := time.Since(t0)
	time.Sleep(o.settle)
	after, err := fetchCounts(o.counts)
	if err != nil {
		return StoreResult{}, nil, err
	}
	seen := diff(kindsBefore, kinds.snapshot())
	st := StoreResult{Requests: requests, Seconds: elapsed.Seconds(), PerOp: map[string]float64{}, PerKind: perN(seen, requests), Counted: seen}
	for op, v := range after {
		d := v - before[op]
		if d == 0 {
			continue
		}
		per := float64(d) / float64(requests)
		short := op[strings.LastIndexByte(op, '.')+1:]
		st.PerOp[short] += per
		switch {
		case slices.Contains(dynamoReads, short):
			st.ReadsPerReq += per
		case slices.Contains(dynamoWrites, short):
			st.WritesPerReq += per
		default:
			st.OtherPerReq += per
		}
	}
	return st, diff(ssmBefore, ssmCounts(ssm)), nil
}

// binary is a Lambda function's executable and environment.
type binary struct {
	name, path string
	env        []string
}

// process is a running function with its own emulated Runtime API.
type process struct {
	rt     *lambdaemu.Runtime
	cmd    *exec.Cmd
	ready  chan time.Time // one value per GET next
	done   chan struct{}
	stderr *tail
}

// start runs the binary against a fresh Runtime and waits until it asks for
// its first invocation.
func (b binary) start(ctx context.Context) (*process, error) {
	p, t0, err := b.launch()
	if err != nil {
		return nil, err
	}
	if _, err := p.waitNext(ctx, t0); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

// coldStart returns the time from process start to its first GET next,
// and the duration of the first invocation (event, answered with want).
func (b binary) coldStart(ctx context.Context, event []byte, want string) (ready, first time.Duration, err error) {
	p, t0, err := b.launch()
	if err != nil {
		return 0, 0, err
	}
	defer p.stop()
	at, err := p.waitNext(ctx, t0)
	if err != nil {
		return 0, 0, err
	}
	s, err := p.invoke(ctx, event, want)
	if err != nil {
		return 0, 0, fmt.Errorf("%s: first invocation: %w", b.name, err)
	}
	return at.Sub(t0), s.duration, nil
}

func (b binary) launch() (*process, time.Time, error) {
	rt, err := lambdaemu.Start()
	if err != nil {
		return nil, time.Time{}, err
	}
	p := &process{rt: rt, ready: make(chan time.Time, 16), done: make(chan struct{}), stderr: &tail{}}
	rt.SetOnNext(func() {
		select {
		case p.ready <- time.Now():
		default:
		}
	})
	p.cmd = exec.Command(b.path)
	p.cmd.Env = append([]string{"AWS_LAMBDA_RUNTIME_API=" + rt.Addr()}, b.env...)
	p.cmd.Stdout = io.Discard // EMF metrics
	p.cmd.Stderr = p.stderr
	t0 := time.Now()
	if err := p.cmd.Start(); err != nil {
		rt.Close()
		return nil, t0, fmt.Errorf("%s: %w", b.name, err)
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	return p, t0, nil
}

// waitNext waits for the function's next GET next (since t0, for errors).
func (p *process) waitNext(ctx context.Context, since time.Time) (time.Time, error) {
	timer := time.NewTimer(30 * time.Second)
	defer timer.Stop()
	select {
	case at := <-p.ready:
		return at, nil
	case b := <-p.rt.InitError:
		return time.Time{}, fmt.Errorf("init error: %s\nstderr: %s", b, p.stderr)
	case <-p.done:
		return time.Time{}, fmt.Errorf("function exited (%v)\nstderr: %s", p.cmd.ProcessState, p.stderr)
	case <-timer.C:
		return time.Time{}, fmt.Errorf("no GET next within 30 s of %v\nstderr: %s", since.Format(time.RFC3339Nano), p.stderr)
	case <-ctx.Done():
		return time.Time{}, ctx.Err()
	}
}

func (p *process) stop() {
	p.cmd.Process.Kill()
	<-p.done
	p.rt.Close()
}

type sample struct {
	duration, firstByte, afterLast, eofAfterLast time.Duration
}

// invoke runs one invocation on a warm process and times it.
func (p *process) invoke(ctx context.Context, event []byte, want string) (sample, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	t0 := time.Now()
	resp, err := p.rt.Invoke(ctx, event, t0.Add(time.Minute))
	if err != nil {
		return sample{}, fmt.Errorf("invoke: %w\nstderr: %s", err, p.stderr)
	}
	if resp.Err != nil {
		return sample{}, fmt.Errorf("function error: %w\nstderr: %s", resp.Err, p.stderr)
	}
	first := time.Now()
	var body bytes.Buffer
	var last time.Time
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			last = time.Now()
			body.Write(buf[:n])
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return sample{}, fmt.Errorf("body: %w", err)
		}
	}
	eof := time.Now()
	if resp.Status != 200 || !strings.Contains(body.String(), want) {
		return sample{}, fmt.Errorf("status %d, body %q (want %q)", resp.Status, body.String(), want)
	}
	next, err := p.waitNext(ctx, t0)
	if err != nil {
		return sample{}, err
	}
	return sample{duration: next.Sub(t0), firstByte: first.Sub(t0), afterLast: next.Sub(last), eofAfterLast: eof.Sub(last)}, nil
}

// tail keeps the last 16 KiB written to it (a process's stderr).
type tail struct {
	mu sync.Mutex
	b  []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 16<<10 {
		t.b = t.b[len(t.b)-16<<10:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// kindCounter is a pass-through proxy to DynamoDB that counts calls by
// operation and the kind of item they touch.
type kindCounter struct {
	URL string
	srv *http.Server
	mu  sync.Mutex
	n   map[string]int64
}

func startKindCounter(upstream string) (*kindCounter, error) {
	u, err := url.Parse(upstream)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	k := &kindCounter{URL: "http://" + ln.Addr().String(), n: map[string]int64{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	// A call cut off because the function was stopped (the cold starts
	// kill each process after its first invocation, background flushes
	// may be in flight) is counted apart, not logged.
	rp.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
		k.mu.Lock()
		k.n["(cut off: "+r.Header.Get("X-Amz-Target")[strings.LastIndexByte(r.Header.Get("X-Amz-Target"), '.')+1:]+")"]++
		k.mu.Unlock()
		w.WriteHeader(http.StatusBadGateway)
	}
	k.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		op := r.Header.Get("X-Amz-Target")
		op = op[strings.LastIndexByte(op, '.')+1:]
		key := op + " " + itemKinds(b)
		k.mu.Lock()
		k.n[key]++
		k.mu.Unlock()
		rp.ServeHTTP(w, r)
	})}
	go k.srv.Serve(ln)
	return k, nil
}

func (k *kindCounter) Close() error { return k.srv.Close() }

func (k *kindCounter) snapshot() map[string]int64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make(map[string]int64, len(k.n))
	for key, v := range k.n {
		out[key] = v
	}
	return out
}

// itemKinds names the kinds of item a DynamoDB request touches: the first
// component of every partition key in it ("usage", "breaker", ...), or of
// the string values bound in a key condition (Query).
func itemKinds(body []byte) string {
	var v any
	if json.Unmarshal(body, &v) != nil {
		return "?"
	}
	set := map[string]bool{}
	var walk func(any, string)
	walk = func(v any, parent string) {
		switch x := v.(type) {
		case map[string]any:
			for name, c := range x {
				if m, ok := c.(map[string]any); ok && (name == deployment.AttrPK || parent == "ExpressionAttributeValues") {
					if s, ok := m["S"].(string); ok && (name == deployment.AttrPK || strings.Contains(s, "#")) {
						set[strings.SplitN(s, "#", 2)[0]] = true
						continue
					}
				}
				walk(c, name)
			}
		case []any:
			for _, c := range x {
				walk(c, parent)
			}
		}
	}
	walk(v, "")
	if len(set) == 0 {
		return "(no key)"
	}
	names := make([]string, 0, len(set))
	for s := range set {
		names = append(names, s)
	}
	sort.Strings(names)
	return strings.Join(names, "+")
}
