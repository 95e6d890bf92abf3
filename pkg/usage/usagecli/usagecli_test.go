package usagecli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/deployment"
	"github.com/llmgw/llmgw/pkg/store/embedded"
)

func TestParseDay(t *testing.T) {
	now := time.Date(2026, 11, 20, 23, 30, 0, 0, time.FixedZone("X", -5*3600)) // 2026-11-21 04:30 UTC
	for in, want := range map[string]string{"today": "2026-11-21", "yesterday": "2026-11-20", "2026-02-28": "2026-02-28"} {
		got, err := ParseDay(in, now)
		if err != nil || got.Format(time.DateOnly) != want || got.Location() != time.UTC {
			t.Errorf("%s: %v %v, want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "2026-13-01", "21/11/2026"} {
		if _, err := ParseDay(bad, now); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestOpenStore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	missing := StoreFlags{Kind: "embedded", State: filepath.Join(dir, "none.db")}
	if _, err := missing.Open(ctx); err == nil || !strings.Contains(err.Error(), "-state") {
		t.Fatalf("missing file: %v", err)
	}
	if _, err := (&StoreFlags{Kind: "dynamodb"}).Open(ctx); err == nil || !strings.Contains(err.Error(), deployment.EnvTable) {
		t.Fatalf("dynamodb without a table: %v", err)
	}
	if _, err := (&StoreFlags{Kind: "redis"}).Open(ctx); err == nil {
		t.Fatal("unknown kind accepted")
	}
	path := filepath.Join(dir, "state.db")
	held, err := embedded.Open(path) // a running gateway holds the file
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if _, err := (&StoreFlags{Kind: "embedded", State: path}).Open(ctx); err == nil || !strings.Contains(err.Error(), "-url") {
		t.Fatalf("file held by a gateway: %v", err)
	}
	held.Close()
	s, err := (&StoreFlags{State: path}).Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
}
