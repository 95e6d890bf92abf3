package usage

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/deployment"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/store"
)

// Spill is a durable fallback for usage records the store did not take:
// the [Recorder] hands it a record whose writes failed, and [Recorder.Drain]
// later writes every spilled record to the store, idempotently (Put
// IfAbsent on the record's key, so a record drained twice, or both written
// and spilled, is still one item). Records are passed encoded (the JSON of
// the stored item's Data: team, cost and time already final).
type Spill interface {
	// Spill stores one encoded record durably, or fails.
	Spill(ctx context.Context, record []byte) error
	// Drain calls put with spilled records, oldest first, and forgets
	// those put accepted. It stops at put's first error (the store is
	// still down), keeping that record and the ones after it, and returns
	// how many were forgotten.
	Drain(ctx context.Context, put func(ctx context.Context, record []byte) error) (int, error)
}

// DrainSummary reports a drain.
type DrainSummary struct {
	// Records is how many spilled records are now in the store.
	Records int `json:"records"`
	// Bad counts spilled entries that did not decode (dropped, logged).
	Bad int `json:"bad"`
	// Earliest is the earliest UTC day of a drained record (zero: none):
	// a rollup must recompute from that day on.
	Earliest time.Time `json:"earliest"`
}

// Drain writes every record of the Recorder's Spill to the store (see
// [Spill]); nothing happens without one. It stops at the first store
// failure, keeping the rest for the next drain.
func (r *Recorder) Drain(ctx context.Context) (DrainSummary, error) {
	var sum DrainSummary
	if r.Spill == nil {
		return sum, nil
	}
	var mu sync.Mutex
	n, err := r.Spill.Drain(ctx, func(ctx context.Context, data []byte) error {
		var rec exchange.Record
		if err := json.Unmarshal(data, &rec); err != nil || rec.RequestID == "" || rec.Time.IsZero() {
			mu.Lock()
			sum.Bad++
			mu.Unlock()
			return nil // undecodable: drop it rather than block the drain forever
		}
		cfg := r.config()
		it, err := recordItem(cfg, &rec)
		if err != nil {
			return err
		}
		if err := r.write(ctx, cfg, it, false); err != nil {
			return err
		}
		mu.Lock()
		if day := dayStart(rec.Time); sum.Earliest.IsZero() || day.Before(sum.Earliest) {
			sum.Earliest = day
		}
		mu.Unlock()
		return nil
	})
	sum.Records = n - sum.Bad
	if sum.Bad > 0 {
		r.log.LogAttrs(ctx, slog.LevelWarn, "usage: spilled entries that do not decode were dropped", slog.Int("count", sum.Bad))
	}
	return sum, err
}

// FileSpill is a [Spill] in an append-only file of JSON lines (local
// runs: next to the embedded store). Every record is appended and fsync'd
// before Spill returns. A drain first renames the file aside (so spills go
// on into a fresh one) and deletes the renamed file once all of it is in
// the store; an interrupted drain leaves it for the next one, which
// writes its records again (a no-op for those already stored). Processes
// sharing the file (a gateway and the rollup command) coordinate with an
// advisory lock where the platform has one (flock on Unix).
type FileSpill struct {
	path string
	mu   sync.Mutex // one append or rename at a time within the process
}

// NewFileSpill spills to path (its directory is created when needed).
func NewFileSpill(path string) *FileSpill { return &FileSpill{path: path} }

// Path is the spill file.
func (f *FileSpill) Path() string { return f.path }

// Spill implements [Spill]: one line, appended and fsync'd.
func (f *FileSpill) Spill(_ context.Context, record []byte) error {
	if bytes.ContainsAny(record, "\r\n") {
		return fmt.Errorf("usage: spill: %w: a record must be one line", store.ErrInvalid)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := os.MkdirAll(filepath.Dir(f.path), 0o700); err != nil {
		return fmt.Errorf("usage: spill: %w", err)
	}
	for attempt := 0; attempt < 3; attempt++ {
		file, err := os.OpenFile(f.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return fmt.Errorf("usage: spill: %w", err)
		}
		current, err := lockCurrent(file, f.path)
		if err != nil || !current {
			file.Close() // a drain renamed it meanwhile: open the new one
			if err != nil {
				return fmt.Errorf("usage: spill: %w", err)
			}
			continue
		}
		_, err = file.Write(append(slices.Clip(record), '\n'))
		if err == nil {
			err = file.Sync()
		}
		if cerr := file.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("usage: spill %s: %w", f.path, err)
		}
		return nil
	}
	return fmt.Errorf("usage: spill %s: the file kept being renamed", f.path)
}

// Drain implements [Spill].
func (f *FileSpill) Drain(ctx context.Context, put func(ctx context.Context, record []byte) error) (int, error) {
	if err := f.rotate(); err != nil {
		return 0, err
	}
	names, err := filepath.Glob(f.path + ".draining-*")
	if err != nil {
		return 0, err
	}
	slices.Sort(names) // by rename time: oldest first
	total := 0
	for _, name := range names {
		n, err := drainFile(ctx, name, put)
		total += n
		if err != nil {
			return total, err
		}
		if err := os.Remove(name); err != nil {
			return total, err
		}
	}
	return total, nil
}

// rotate renames the spill file aside for draining (nothing to do when it
// does not exist or is empty).
func (f *FileSpill) rotate() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	file, err := os.OpenFile(f.path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("usage: drain: %w", err)
	}
	defer file.Close()
	current, err := lockCurrent(file, f.path)
	if err != nil || !current {
		return err // renamed by another drainer meanwhile: it is theirs
	}
	if fi, err := file.Stat(); err != nil || fi.Size() == 0 {
		return err
	}
	// Fixed-width nanoseconds: names sort in rename order.
	aside := fmt.Sprintf("%s.draining-%020d-%d", f.path, time.Now().UnixNano(), os.Getpid())
	return os.Rename(f.path, aside)
}

// drainFile puts every line of one renamed spill file; a line cut short by
// a crash (the last one, without its newline) is skipped. It returns the
// lines handled and put's first error.
func drainFile(ctx context.Context, name string, put func(ctx context.Context, record []byte) error) (int, error) {
	file, err := os.Open(name)
	if err != nil {
		return 0, err
	}
	defer file.Close()
	rd := bufio.NewReader(file)
	n := 0
	for {
		line, err := rd.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			if perr := put(ctx, bytes.TrimRight(line, "\r\n")); perr != nil {
				return n, perr
			}
			n++
		}
		if errors.Is(err, io.EOF) {
			return n, nil // the end (a torn last line is skipped)
		}
		if err != nil {
			return n, err
		}
		if ctx.Err() != nil {
			return n, ctx.Err()
		}
	}
}

// DefaultSpillFile is the spill file of a local run whose embedded store
// file is statePath: deployment.SpillFileName next to it.
func DefaultSpillFile(statePath string) string {
	return filepath.Join(filepath.Dir(statePath), deployment.SpillFileName)
}

// spillWarn logs spilled records at most once per period per Recorder.
type spillWarn struct {
	mu   sync.Mutex
	last time.Time
	n    int
}

func (w *spillWarn) allow(now time.Time) (bool, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.last.IsZero() && now.Sub(w.last) < 10*time.Second {
		w.n++
		return false, 0
	}
	n := w.n
	w.last, w.n = now, 0
	return true, n
}

// storeTimeoutOf bounds one store call of the Recorder.
func storeTimeoutOf(cfg *config.Config) time.Duration {
	if cfg != nil {
		if d := cfg.Usage.StoreTimeout.D(); d > 0 {
			return d
		}
	}
	return config.DefaultStoreTimeout
}

// sameFile reports whether the open file is the one at path now.
func sameFile(file *os.File, path string) (bool, error) {
	fi, err := file.Stat()
	if err != nil {
		return false, err
	}
	pi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return os.SameFile(fi, pi), nil
}
