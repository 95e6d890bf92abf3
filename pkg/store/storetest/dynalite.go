package storetest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/internal/testkit"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/llmgw/llmgw/pkg/store/dynamo"
)

// dynaliteStartTimeout bounds how long StartDynalite waits for the emulator
// to answer (node start-up on a loaded two-core machine can take seconds).
const dynaliteStartTimeout = 30 * time.Second

// StartDynalite starts dynalite (an in-memory DynamoDB emulator) as
// `node <repo>/node_modules/dynalite/cli.js` on a free 127.0.0.1 port, waits
// until it answers HTTP, stops it when t ends, and returns its endpoint
// URL (http://127.0.0.1:PORT).
//
// When node or the dynalite package is missing, the test fails if the CI
// environment variable is set (CI must run these tests), and is skipped
// with instructions otherwise. Install with `npm ci` at the repository root
// (package.json pins dynalite; Node >= 20).
func StartDynalite(t testing.TB) string {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatalf("StartDynalite: %v", err)
	}
	cli := filepath.Join(root, "node_modules", "dynalite", "cli.js")
	node, nodeErr := exec.LookPath("node")
	_, cliErr := os.Stat(cli)
	if nodeErr != nil || cliErr != nil {
		why := "node is not on PATH"
		if nodeErr == nil {
			why = cli + " does not exist"
		}
		msg := fmt.Sprintf("\n"+
			"************************************************************************\n"+
			"*  DYNAMODB TESTS NOT RUN: %s.\n"+
			"*  Install Node >= 20, then run `npm ci` in %s\n"+
			"*  (it installs dynalite, the DynamoDB emulator these tests start).\n"+
			"************************************************************************", why, root)
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}

	var lastErr error
	for attempt := 0; attempt < 3; attempt++ { // a free port can be taken before node binds it
		endpoint, stop, err := startDynalite(node, cli)
		if err == nil {
			t.Cleanup(stop)
			return endpoint
		}
		lastErr = err
	}
	t.Fatalf("StartDynalite: %v", lastErr)
	return ""
}

// syncBuffer is a goroutine-safe buffer (log sinks, process output).
type syncBuffer = testkit.SyncBuffer

func startDynalite(node, cli string) (endpoint string, stop func(), err error) {
	port, err := freePort()
	if err != nil {
		return "", nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	cmd := exec.Command(node, cli, "--host", "127.0.0.1", "--port", strconv.Itoa(port),
		// Tables are ACTIVE at once instead of after 500 ms.
		"--createTableMs", "0", "--deleteTableMs", "0", "--updateTableMs", "0")
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	configureChild(cmd)
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("start dynalite: %w", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stop = func() {
		_ = cmd.Process.Kill() // only the process we started
		<-exited
	}

	endpoint = "http://" + addr
	hc := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(dynaliteStartTimeout)
	for {
		// Any HTTP answer (dynalite rejects the unsigned request) means up.
		resp, err := hc.Post(endpoint, "application/x-amz-json-1.0", strings.NewReader("{}"))
		if err == nil {
			resp.Body.Close()
			return endpoint, stop, nil
		}
		select {
		case <-exited:
			return "", nil, fmt.Errorf("dynalite exited before answering on %s: %s", addr, strings.TrimSpace(out.String()))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stop()
			return "", nil, fmt.Errorf("dynalite did not answer on %s within %v: %s", addr, dynaliteStartTimeout, strings.TrimSpace(out.String()))
		}
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// repoRoot walks up from the working directory (a package directory under
// `go test`) to the directory holding go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// DynaliteClient returns a DynamoDB client for a local endpoint such as the
// one StartDynalite returns: region us-east-1, static fake credentials, no
// shared AWS configuration read.
func DynaliteClient(endpoint string) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: &endpoint,
		Credentials:  credentials.NewStaticCredentialsProvider("fake", "fake", ""),
	})
}

var tableSeq atomic.Int64

var tableNameJunk = regexp.MustCompile(`[^a-zA-Z0-9_.-]+`)

// UniqueTableName returns a table name, unique within the process, derived
// from the test's name.
func UniqueTableName(t testing.TB) string {
	base := tableNameJunk.ReplaceAllString(t.Name(), "_")
	if len(base) > 200 {
		base = base[len(base)-200:]
	}
	return fmt.Sprintf("t%d_%s", tableSeq.Add(1), base)
}

// NewDynamoStore returns a DynamoDB store on a fresh table (created and
// ACTIVE) of the dynalite at endpoint, with the clock of t (see [Now]) and
// opts applied after it.
func NewDynamoStore(t testing.TB, endpoint string, opts ...dynamo.Option) *dynamo.Store {
	t.Helper()
	return NewDynamoStoreWithAPI(t, DynaliteClient(endpoint), opts...)
}

// NewDynamoStoreWithAPI is [NewDynamoStore] on a given client, e.g. a
// wrapper of [DynaliteClient] that counts or fails calls.
func NewDynamoStoreWithAPI(t testing.TB, api dynamo.API, opts ...dynamo.Option) *dynamo.Store {
	t.Helper()
	s := dynamo.New(api, UniqueTableName(t), append([]dynamo.Option{dynamo.WithClock(Now(t))}, opts...)...)
	ctx, cancel := context.WithTimeout(context.Background(), dynaliteStartTimeout)
	defer cancel()
	if err := s.EnsureTable(ctx); err != nil {
		t.Fatalf("NewDynamoStore: %v", err)
	}
	return s
}
