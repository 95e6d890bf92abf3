package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"
)

// dynamoReads and dynamoWrites classify DynamoDB operations (the
// X-Amz-Target suffix) for the per-request figures.
var (
	dynamoReads  = []string{"GetItem", "BatchGetItem", "Query", "Scan", "TransactGetItems"}
	dynamoWrites = []string{"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"}
)

// StoreResult is one target's DynamoDB calls per request.
type StoreResult struct {
	Requests      int                `json:"requests"`
	Seconds       float64            `json:"seconds"`
	Errors        int                `json:"errors"`
	PerOp         map[string]float64 `json:"calls_per_request_by_operation"`
	ReadsPerReq   float64            `json:"reads_per_request"`
	WritesPerReq  float64            `json:"writes_per_request"`
	OtherPerReq   float64            `json:"other_per_request"`
	GatewayHeader map[string]int     `json:"gateway_headers,omitempty"`
}

// StoreReport is the output of storecalls mode.
type StoreReport struct {
	Mode   string                  `json:"mode"`
	Status string                  `json:"status"`
	Order  []string                `json:"order"`
	Paths  map[string]*StoreResult `json:"paths"`
}

func fetchCounts(client *http.Client, url string) (map[string]int64, error) {
	resp, err := client.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	m := map[string]int64{}
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		return nil, fmt.Errorf("%s: %w", url, err)
	}
	return m, nil
}

func runStoreCalls(args []string) error {
	fs := flag.NewFlagSet("storecalls", flag.ExitOnError)
	var targets targetList
	fs.Var(&targets, "target", "name=URL[@model] (repeat)")
	counts := fs.String("counts", "", "the counting proxy's /__bench/counts URL")
	n := fs.Int("n", 200, "measured requests per target (concurrency 1)")
	warm := fs.Int("warmup", 20, "unmeasured requests per target first")
	settle := fs.Duration("settle", time.Second, "wait after the requests before reading the counts (asynchronous writes)")
	out := fs.String("out", "-", "output JSON file")
	fs.Parse(args)
	if len(targets) == 0 || *counts == "" {
		return errors.New("need -target and -counts")
	}
	if err := loopbackURL(*counts); err != nil {
		return err
	}
	hc := httpClient(1, 10*time.Second)
	rep := StoreReport{Mode: "storecalls", Status: "measured", Paths: map[string]*StoreResult{}}
	for _, t := range targets {
		rep.Order = append(rep.Order, t.Name)
		client := httpClient(2, 30*time.Second)
		payload := body(t, false, 200)
		if w := attack(client, t, payload, 0, 1, 1, time.Minute, *warm); w.errors > 0 {
			return fmt.Errorf("%s: warm-up: %s", t.Name, w.firstErr)
		}
		time.Sleep(*settle)
		before, err := fetchCounts(hc, *counts)
		if err != nil {
			return err
		}
		r := attack(client, t, payload, 0, 1, 1, 2*time.Minute, *n)
		time.Sleep(*settle)
		after, err := fetchCounts(hc, *counts)
		if err != nil {
			return err
		}
		res := &StoreResult{Requests: r.requests, Seconds: r.elapsed.Seconds(), Errors: r.errors, PerOp: map[string]float64{}, GatewayHeader: r.headers}
		for op, v := range after {
			d := v - before[op]
			if d == 0 || r.requests == 0 {
				continue
			}
			per := float64(d) / float64(r.requests)
			short := op[strings.LastIndexByte(op, '.')+1:]
			res.PerOp[short] += per
			switch {
			case contains(dynamoReads, short):
				res.ReadsPerReq += per
			case contains(dynamoWrites, short):
				res.WritesPerReq += per
			default:
				res.OtherPerReq += per
			}
		}
		rep.Paths[t.Name] = res
		fmt.Fprintf(os.Stderr, "storecalls %-12s requests=%d reads/req=%.3f writes/req=%.3f other/req=%.3f\n",
			t.Name, r.requests, res.ReadsPerReq, res.WritesPerReq, res.OtherPerReq)
		if r.errors > 0 {
			return fmt.Errorf("%s: %d errors, first: %s", t.Name, r.errors, r.firstErr)
		}
	}
	return writeJSON(*out, rep)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// RateReport is the output of rate mode.
type RateReport struct {
	Mode     string  `json:"mode"`
	Rate     int     `json:"rate"`
	Seconds  float64 `json:"seconds"`
	Requests int     `json:"requests"`
	Errors   int     `json:"errors"`
	Latency  Dist    `json:"latency"`
}

// runRate holds one constant rate on one target (the load under which a
// profile is taken).
func runRate(args []string) error {
	fs := flag.NewFlagSet("rate", flag.ExitOnError)
	var targets targetList
	fs.Var(&targets, "target", "name=URL[@model]")
	rate := fs.Int("rate", 1000, "requests/s")
	du := fs.Duration("duration", 10*time.Second, "how long")
	size := fs.Int("body-bytes", 200, "request body size")
	out := fs.String("out", "-", "output JSON file")
	fs.Parse(args)
	if len(targets) != 1 {
		return errors.New("need exactly one -target")
	}
	t := targets[0]
	r := attack(httpClient(1024, 5*time.Second), t, body(t, false, *size), *rate, 16, 2000, *du, 0)
	rep := RateReport{Mode: "rate", Rate: *rate, Seconds: r.elapsed.Seconds(), Requests: r.requests, Errors: r.errors, Latency: distOf(r.latencies)}
	fmt.Fprintf(os.Stderr, "rate %-10s rate=%d requests=%d errors=%d p99=%.0fus\n", t.Name, *rate, r.requests, r.errors, rep.Latency.P99)
	return writeJSON(*out, rep)
}
