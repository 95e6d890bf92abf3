package app_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/store"
	"github.com/llmgw/llmgw/pkg/store/embedded"
)

// repoRoot is the directory holding go.mod.
func repoRoot(t *testing.T) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found")
		}
		dir = parent
	}
}

// TestSIGTERMMidBurstLosesNoRecord runs the real gateway binary (local
// mode, usage records written in the background), sends a burst of
// requests, sends SIGTERM while the burst is going on, and counts the
// usage records in the store file once the process has exited: exactly one
// per request that got a response. (SIGKILL cannot flush: the guarantee is
// for an orderly shutdown.)
func TestSIGTERMMidBurstLosesNoRecord(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "gateway")
	// The same flags as pkg/lambdaemu's build of the same main, so that the
	// suite compiles it once.
	build := exec.Command("go", "build", "-tags", "lambda.norpc", "-trimpath", "-o", bin, "./functions/gateway")
	build.Dir = repoRoot(t)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the gateway: %v\n%s", err, out)
	}

	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m",`+
			`"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],`+
			`"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`)
	}))
	defer upstream.Close()
	cfgPath := filepath.Join(dir, "gateway.yaml")
	cfg := fmt.Sprintf("providers:\n  mock:\n    kind: openai\n    base_url: %s/v1\nroutes:\n  bench:\n    targets:\n      - {provider: mock, model: m}\n", upstream.URL)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	statePath := filepath.Join(dir, "state.db")
	cmd := exec.Command(bin, "-config", cfgPath, "-addr", "127.0.0.1:0", "-state", statePath)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now().UTC()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()
	addrRE := regexp.MustCompile(`"addr":"(http://[0-9.:]+)"`)
	lines := bufio.NewScanner(stderr)
	var base string
	for lines.Scan() {
		if m := addrRE.FindStringSubmatch(lines.Text()); m != nil {
			base = m[1]
			break
		}
	}
	if base == "" {
		t.Fatal("the gateway did not log its address")
	}
	var logTail strings.Builder
	logDone := make(chan struct{})
	go func() {
		defer close(logDone)
		for lines.Scan() {
			if !strings.Contains(lines.Text(), `"msg":"request"`) {
				logTail.WriteString(lines.Text() + "\n")
			}
		}
	}()

	const workers = 16
	const termAfter = 300 // responses before SIGTERM
	var responses atomic.Int64
	var once sync.Once
	var wg sync.WaitGroup
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers}}
	body := `{"model":"bench","messages":[{"role":"user","content":"hi"}]}`
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				resp, err := client.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(body))
				if err != nil {
					return // the listener is closed: the burst is over
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Errorf("status %d", resp.StatusCode)
				}
				if responses.Add(1) == termAfter {
					once.Do(func() { _ = cmd.Process.Signal(syscall.SIGTERM) })
				}
			}
		}()
	}
	wg.Wait()
	werr := cmd.Wait()
	<-logDone
	if werr != nil {
		t.Fatalf("gateway exited with %v after SIGTERM\n%s", werr, logTail.String())
	}
	got := responses.Load()
	if got < termAfter {
		t.Fatalf("only %d responses before the burst ended", got)
	}

	st, err := embedded.Open(statePath)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var records int64
	ctx := context.Background()
	for day := start.Truncate(24 * time.Hour); !day.After(time.Now().UTC()); day = day.Add(24 * time.Hour) {
		if err := st.Query(ctx, store.UsagePK(config.AnonymousTeam, day), "", "", func(store.Item) bool {
			records++
			return true
		}); err != nil {
			t.Fatal(err)
		}
	}
	if records != got {
		t.Fatalf("%d usage records in the store, %d requests got a response: the shutdown must write every queued record", records, got)
	}
	t.Logf("%d responses, %d records", got, records)
}
