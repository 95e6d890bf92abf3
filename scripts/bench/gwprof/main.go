// Command gwprof is the gateway's local mode (the same app.RunLocal that
// functions/gateway runs) plus a net/http/pprof listener on a second
// loopback address, so that the benchmark can take a CPU profile of the
// gateway process under the saturation load. It exists only for profiling:
// every figure in the results table comes from the real functions/gateway
// binary.
//
//	gwprof -config FILE -addr 127.0.0.1:0 -pprof 127.0.0.1:0 -pprof-addr-file F
package main

import (
	"context"
	"flag"
	"log/slog"
	"net"
	"net/http"
	_ "net/http/pprof" // registers /debug/pprof on http.DefaultServeMux
	"os"
	"runtime"

	"github.com/llmgw/llmgw/pkg/app"
	"github.com/llmgw/llmgw/pkg/deployment"
	"github.com/llmgw/llmgw/pkg/requestlog"
)

func main() {
	log := slog.New(requestlog.NewJSONHandler(os.Stderr, nil))
	var o app.LocalOptions
	flag.StringVar(&o.ConfigPath, "config", "", "config file (YAML or JSON)")
	flag.StringVar(&o.Addr, "addr", "127.0.0.1:8080", "listen address")
	flag.StringVar(&o.Store.Kind, "store", "embedded", "state store: embedded or dynamodb (as functions/gateway)")
	flag.StringVar(&o.Store.StatePath, "state", app.DefaultStatePath, "embedded store file")
	flag.StringVar(&o.Store.Table, "table", deployment.DefaultTable, "DynamoDB table")
	pprofAddr := flag.String("pprof", "127.0.0.1:0", "pprof listen address (loopback only)")
	pprofFile := flag.String("pprof-addr-file", "", "write the pprof listener's host:port here")
	memRate := flag.Int("memprofilerate", 0, "runtime.MemProfileRate (0: the default; 1 records every allocation, for an exact heap profile)")
	flag.Parse()
	if *memRate > 0 {
		runtime.MemProfileRate = *memRate
	}
	o.Logger = log

	host, _, err := net.SplitHostPort(*pprofAddr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		log.Error("-pprof must be a loopback IP address", slog.String("pprof", *pprofAddr))
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", *pprofAddr)
	if err != nil {
		log.Error("pprof listener", slog.Any("error", err))
		os.Exit(1)
	}
	if *pprofFile != "" {
		if err := os.WriteFile(*pprofFile, []byte(ln.Addr().String()+"\n"), 0o644); err != nil {
			log.Error("pprof addr file", slog.Any("error", err))
			os.Exit(1)
		}
	}
	go http.Serve(ln, http.DefaultServeMux)

	if err := app.RunLocal(context.Background(), o); err != nil {
		log.Error("gateway stopped", slog.Any("error", err))
		os.Exit(1)
	}
}
