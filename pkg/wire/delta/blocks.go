package delta

// Blocks numbers the content blocks an encoder writes for an API whose
// answer is a list of blocks (Anthropic Messages, Bedrock Converse), the
// one copy of that bookkeeping both ingresses keep: blocks are numbered
// 0, 1, 2, ... in output order; at most one text-like block (text or
// reasoning, of a kind the encoder names, never 0) is open at a time;
// tool-call blocks, one per tool call index, stay open until they are
// stopped (parallel calls may interleave their arguments), and a stopped
// one is never reopened. Blocks writes nothing: the encoder writes a
// block's start and stop when Blocks says which.
type Blocks struct {
	next   int
	cur    int   // the open text-like block's kind, 0: none
	curIdx int   // its index
	tools  []int // block index by tool call index; toolNone: none yet, toolStopped: stopped
}

// Tool call block states in Blocks.tools (a block index is >= 0).
const (
	toolNone    = -1
	toolStopped = -2
)

// MaxToolIndex is the largest tool call index Blocks numbers a block for;
// a call with a larger (or negative) index gets none.
const MaxToolIndex = 1 << 16

// Open numbers a new block (one the encoder starts and stops at once,
// such as redacted reasoning) and returns its index.
func (b *Blocks) Open() int {
	i := b.next
	b.next++
	return i
}

// Current returns the open text-like block's kind (0 when none is open)
// and its index.
func (b *Blocks) Current() (kind, index int) { return b.cur, b.curIdx }

// OpenCurrent numbers a new text-like block of kind (not 0), now the open
// one, and returns its index. The encoder stops what was open first
// (StopNext until it reports none).
func (b *Blocks) OpenCurrent(kind int) int {
	b.cur, b.curIdx = kind, b.Open()
	return b.curIdx
}

// StopCurrent stops the open text-like block, returning its index; ok is
// false when none was open.
func (b *Blocks) StopCurrent() (index int, ok bool) {
	if b.cur == 0 {
		return 0, false
	}
	b.cur = 0
	return b.curIdx, true
}

// NewTool reports whether tool call index (0 to MaxToolIndex) has no
// block yet, neither open nor stopped.
func (b *Blocks) NewTool(index int) bool {
	if index < 0 || index > MaxToolIndex {
		return false
	}
	return index >= len(b.tools) || b.tools[index] == toolNone
}

// OpenTool numbers the block of tool call index, which must be NewTool,
// and returns it. The encoder stops the open text-like block first
// (StopCurrent): tool-call blocks never overlap one.
func (b *Blocks) OpenTool(index int) int {
	for len(b.tools) <= index {
		b.tools = append(b.tools, toolNone)
	}
	i := b.Open()
	b.tools[index] = i
	return i
}

// Tool returns the open block of tool call index; ok is false when it has
// none, or it was stopped.
func (b *Blocks) Tool(index int) (block int, ok bool) {
	if index < 0 || index >= len(b.tools) || b.tools[index] < 0 {
		return 0, false
	}
	return b.tools[index], true
}

// StopNext stops the open block of lowest index (the text-like one or a
// tool call's) and returns it; ok is false when none is open. Calling it
// until it reports none stops every open block in index order.
func (b *Blocks) StopNext() (index int, ok bool) {
	lo, which := -1, -1
	if b.cur != 0 {
		lo = b.curIdx
	}
	for t, i := range b.tools {
		if i >= 0 && (lo < 0 || i < lo) {
			lo, which = i, t
		}
	}
	switch {
	case lo < 0:
		return 0, false
	case which < 0:
		return b.StopCurrent()
	}
	b.tools[which] = toolStopped // a later call with this index is ignored
	return lo, true
}
