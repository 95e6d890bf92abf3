package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// portPlaceholder in a command's arguments is replaced by a free loopback port.
const portPlaceholder = "@PORT@"

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// startAndProbe starts argv (with @PORT@ replaced) and polls
// GET /healthz on that port until it answers 200. It returns the time from
// just before exec to the 200, and stops the process (SIGKILL: only the
// child it started) before returning.
func startAndProbe(argv []string, timeout time.Duration) (time.Duration, error) {
	port, err := freePort()
	if err != nil {
		return 0, err
	}
	ps := strconv.Itoa(port)
	args := make([]string, len(argv))
	for i, a := range argv {
		args[i] = strings.ReplaceAll(a, portPlaceholder, ps)
	}
	url := "http://127.0.0.1:" + ps + "/healthz"
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	cmd := exec.Command(args[0], args[1:]...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	defer func() {
		cmd.Process.Kill()
		<-exited
	}()
	deadline := start.Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return 0, fmt.Errorf("%s exited before answering: %.500s", args[0], stderr.String())
		default:
		}
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(start), nil
			}
		}
		time.Sleep(100 * time.Microsecond)
	}
	return 0, fmt.Errorf("%s: no 200 on %s within %s", args[0], url, timeout)
}

// ColdReport is the output of cold mode.
type ColdReport struct {
	Mode    string   `json:"mode"`
	Name    string   `json:"name"`
	Command []string `json:"command"`
	Runs    int      `json:"runs"`
	Start   Dist     `json:"exec_to_first_200"`
}

func runCold(args []string) error {
	fs := flag.NewFlagSet("cold", flag.ExitOnError)
	name := fs.String("name", "", "name of what is started (for the report)")
	n := fs.Int("n", 20, "starts")
	warm := fs.Int("warmup", 2, "unmeasured starts first (page cache)")
	timeout := fs.Duration("timeout", 10*time.Second, "bound on one start")
	out := fs.String("out", "-", "output JSON file")
	fs.Parse(args)
	argv := fs.Args()
	if len(argv) == 0 {
		return errors.New("no command after the flags (use -- cmd args, with @PORT@ for the port)")
	}
	var d []time.Duration
	for i := 0; i < *warm+*n; i++ {
		t, err := startAndProbe(argv, *timeout)
		if err != nil {
			return err
		}
		if i >= *warm {
			d = append(d, t)
		}
	}
	rep := ColdReport{Mode: "cold", Name: *name, Command: argv, Runs: *n, Start: distOf(d)}
	fmt.Fprintf(os.Stderr, "cold %-12s n=%d p50=%.1fms p99=%.1fms\n", *name, *n, rep.Start.P50/1000, rep.Start.P99/1000)
	return writeJSON(*out, rep)
}

func runProbe(args []string) error {
	fs := flag.NewFlagSet("probe", flag.ExitOnError)
	timeout := fs.Duration("timeout", 10*time.Second, "bound on the start")
	fs.Parse(args)
	if fs.NArg() == 0 {
		return errors.New("no command after the flags (use -- cmd args, with @PORT@ for the port)")
	}
	_, err := startAndProbe(fs.Args(), *timeout)
	return err
}

func runBreaker(args []string) error {
	fs := flag.NewFlagSet("breaker", flag.ExitOnError)
	var targets targetList
	fs.Var(&targets, "target", "name=URL@model: the route whose primary should trip")
	health := fs.String("health", "", "the gateway's /healthz URL")
	id := fs.String("target-id", "", "the breaker's target id (provider/model)")
	maxReq := fs.Int("max", 50, "requests at most")
	fs.Parse(args)
	if len(targets) != 1 || *health == "" || *id == "" {
		return errors.New("need one -target, -health and -target-id")
	}
	if err := loopbackURL(*health); err != nil {
		return err
	}
	t := targets[0]
	client := httpClient(1, 10*time.Second)
	for i := 1; i <= *maxReq; i++ {
		r := attack(client, t, body(t, false, 200), 0, 1, 1, 10*time.Second, 1)
		if r.errors > 0 {
			return fmt.Errorf("request %d failed (the secondary should serve): %s", i, r.firstErr)
		}
		state, err := breakerState(client, *health, *id)
		if err != nil {
			return err
		}
		if state == "open" {
			fmt.Fprintf(os.Stderr, "breaker %s open after %d requests\n", *id, i)
			return nil
		}
	}
	return fmt.Errorf("breaker %s still not open after %d requests", *id, *maxReq)
}

// breakerState reads one target's breaker state from the gateway's /healthz.
func breakerState(client *http.Client, url, id string) (string, error) {
	resp, err := client.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var h struct {
		Targets []struct {
			ID      string `json:"id"`
			Breaker struct {
				State string `json:"state"`
			} `json:"breaker"`
		} `json:"targets"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		return "", fmt.Errorf("%s: %w", url, err)
	}
	for _, t := range h.Targets {
		if t.ID == id {
			return t.Breaker.State, nil
		}
	}
	return "", fmt.Errorf("%s: no target %s", url, id)
}

// runFreePort prints a loopback port that was free a moment ago (for a
// "dead" upstream that refuses connections, or a child's listener).
func runFreePort(args []string) error {
	fs := flag.NewFlagSet("freeport", flag.ExitOnError)
	fs.Parse(args)
	p, err := freePort()
	if err != nil {
		return err
	}
	fmt.Println(p)
	return nil
}

// runFetch GETs one loopback URL into a file (a pprof profile, a liveness
// check), failing on any status but 200 unless -any-status.
func runFetch(args []string) error {
	fs := flag.NewFlagSet("fetch", flag.ExitOnError)
	url := fs.String("url", "", "loopback http URL")
	out := fs.String("out", "", "file to write the body to (empty: discard)")
	timeout := fs.Duration("timeout", 2*time.Minute, "bound on the request")
	anyStatus := fs.Bool("any-status", false, "any HTTP answer will do (a liveness check)")
	fs.Parse(args)
	if err := loopbackURL(*url); err != nil {
		return err
	}
	resp, err := (&http.Client{Timeout: *timeout}).Get(*url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK && !*anyStatus {
		return fmt.Errorf("%s: status %d", *url, resp.StatusCode)
	}
	w := io.Discard
	if *out != "" {
		f, err := os.Create(*out)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	_, err = io.Copy(w, resp.Body)
	return err
}
