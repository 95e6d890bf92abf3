package delta

import (
	"slices"
	"testing"
)

// TestBlocksNumbering: blocks are numbered in output order; tool-call
// blocks stay open past one another while the text-like block is stopped
// before a tool block opens; StopNext stops the open blocks in index
// order; a stopped tool call is never reopened, and an index out of range
// gets no block.
func TestBlocksNumbering(t *testing.T) {
	var b Blocks
	const text = 1
	if i := b.OpenCurrent(text); i != 0 {
		t.Fatalf("first block %d", i)
	}
	if !b.NewTool(1) || b.NewTool(-1) || b.NewTool(MaxToolIndex+1) {
		t.Fatal("NewTool range")
	}
	if i, ok := b.StopCurrent(); !ok || i != 0 {
		t.Fatalf("StopCurrent = %d %v", i, ok)
	}
	t1 := b.OpenTool(1)
	t0 := b.OpenTool(0)
	if t1 != 1 || t0 != 2 || b.NewTool(1) {
		t.Fatalf("tool blocks %d %d", t1, t0)
	}
	if i, ok := b.Tool(0); !ok || i != 2 {
		t.Fatalf("Tool(0) = %d %v", i, ok)
	}
	r := b.Open()
	if r != 3 {
		t.Fatalf("Open = %d", r)
	}
	c := b.OpenCurrent(text)
	var stopped []int
	for i, ok := b.StopNext(); ok; i, ok = b.StopNext() {
		stopped = append(stopped, i)
	}
	if want := []int{1, 2, c}; !slices.Equal(stopped, want) {
		t.Errorf("stopped %v, want %v", stopped, want)
	}
	if _, ok := b.Tool(1); ok || b.NewTool(1) {
		t.Error("a stopped tool call is open or new again")
	}
	if k, _ := b.Current(); k != 0 {
		t.Errorf("current kind %d after stopping all", k)
	}
}
