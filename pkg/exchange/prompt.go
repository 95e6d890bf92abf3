package exchange

import (
	"encoding/json"
	"strings"
	"unsafe"
)

// Prompt is a generation request in canonical form: what an ingress
// decodes its client API into and what every translating adapter builds its
// upstream call from. It belongs to no API: content is typed blocks (text,
// media as bytes with a media type, tool use and results, thinking with its
// opaque signature), tools carry their kind, and sampling and output
// settings are named once. Translation is ingress -> Prompt -> egress, one
// hop each way; what a client API says that a Prompt cannot hold stays in
// Request.Body (for an upstream that speaks the same API) and is listed in
// Request.Untranslated.
type Prompt struct {
	// System is the system prompt, in order: text blocks (with cache
	// breakpoints). A system or developer message inside the conversation
	// is a Message with role RoleSystem instead, at its place.
	System []Block
	// Messages is the conversation, oldest first.
	Messages []Message
	// Tools are the tools the model may call, in the client's order.
	Tools []Tool
	// ToolChoice says whether and which tool the model must call.
	ToolChoice ToolChoice
	// Sampling holds the generation settings.
	Sampling Sampling
	// Output holds the output's shape: format, reasoning, count.
	Output Output
	// User is the client's end-user id (OpenAI's user, Anthropic's
	// metadata.user_id), "" if none.
	User string
	// Metadata is the client's request metadata (string pairs), nil if none.
	Metadata map[string]string
}

// Role is the author of a canonical Message.
type Role string

// The roles of a Message.
const (
	// RoleUser: the user's turn (tool results are blocks of a user turn).
	RoleUser Role = "user"
	// RoleAssistant: the model's turn (text, thinking, tool use).
	RoleAssistant Role = "assistant"
	// RoleSystem: a system (or developer) instruction inside the
	// conversation, at its place; text blocks only.
	RoleSystem Role = "system"
)

// Message is one turn of the conversation.
type Message struct {
	Role Role
	// Content is the turn's blocks, in order.
	Content []Block
	// Name is the participant name some APIs carry (OpenAI's name), "" if none.
	Name string
}

// BlockType says what a Block holds.
type BlockType uint8

// The block types.
const (
	// BlockText is text (Text), with optional Citations.
	BlockText BlockType = iota + 1
	// BlockImage is an image: inline bytes (Data, MediaType) or a URL the
	// upstream fetches (URL).
	BlockImage
	// BlockDocument is a document (a PDF, plain text): inline bytes (Data,
	// MediaType) or a URL (URL); Title and Context when the client gave
	// them, Citations true when it asked for citations. FileName names
	// the file when the client gave one.
	BlockDocument
	// BlockToolUse is a tool call by the model: ToolID, ToolName and its
	// arguments as JSON (Input).
	BlockToolUse
	// BlockToolResult is the result of tool call ToolID: Content (text,
	// images, documents) and IsError.
	BlockToolResult
	// BlockThinking is visible reasoning (Text) with its Signature, which
	// the provider that made it verifies when it is sent back: opaque and
	// byte-exact.
	BlockThinking
	// BlockRedactedThinking is encrypted reasoning: Data holds the opaque
	// bytes as the provider sent them (Anthropic's data string,
	// Converse's redactedContent).
	BlockRedactedThinking
	// BlockRefusal is a refusal the model gave in an earlier turn (Text).
	BlockRefusal
)

// Block is one content block of a Message (or of the system prompt, or of
// a tool result). Which fields are set depends on Type.
type Block struct {
	Type BlockType
	// Text: the text of a text, thinking or refusal block.
	Text string
	// MediaType and Data: an inline image or document (decoded bytes, never
	// base64 or a data URL) or redacted thinking's opaque bytes.
	MediaType string
	Data      []byte
	// URL: an image or document the upstream fetches itself.
	URL string
	// Detail is an image's detail hint (OpenAI's low, high, auto), "" if none.
	Detail string
	// Title, Context and FileName describe a document; AskCitations is
	// true when the client asked for citations on it.
	Title, Context, FileName string
	AskCitations             bool
	// ToolID and ToolName: a tool use (the call) or a tool result (ToolID).
	ToolID, ToolName string
	// Input is a tool use's arguments, a JSON object as the client sent it.
	Input json.RawMessage
	// Content is a tool result's content.
	Content []Block
	// IsError marks a tool result that reports a failure.
	IsError bool
	// Signature is a thinking block's signature, opaque and byte-exact.
	Signature string
	// Origin names the model family that made a thinking or redacted
	// thinking block (ReasoningOpenAI, ReasoningGemini), when the ingress
	// knows it; "" for the client API's own (see Block.MadeBy).
	Origin string
	// Citations are the sources a text block cites (earlier answers sent
	// back).
	Citations []Citation
	// Cache, when set, is a prompt-cache breakpoint after this block.
	Cache *CacheBreakpoint
}

// Citation is one source a text block cites.
type Citation struct {
	// Type is the citation's kind as the provider named it
	// (char_location, page_location, content_block_location,
	// web_search_result_location, ...).
	Type string
	// CitedText is the cited passage.
	CitedText string
	// DocumentIndex and DocumentTitle name the cited document.
	DocumentIndex int
	DocumentTitle string
	// Start and End locate the passage (characters, pages or blocks, by
	// Type).
	Start, End int
	// URL is a cited web page.
	URL string
	// Raw is the citation as the client sent it, for an upstream of the
	// same API family (it may carry fields not named here).
	Raw json.RawMessage
}

// CacheBreakpoint is a prompt-cache breakpoint (Anthropic's cache_control,
// Converse's cachePoint).
type CacheBreakpoint struct {
	// TTL is the breakpoint's lifetime ("5m", "1h"), "" for the default.
	TTL string
}

// ToolKind says what kind of tool a Tool is.
type ToolKind uint8

// The tool kinds.
const (
	// ToolFunction is a function the client runs: Name, Description and
	// the JSON schema of its input (Schema).
	ToolFunction ToolKind = iota + 1
	// ToolCustom is a free-form tool whose input is text, optionally bound
	// by a grammar (OpenAI's custom tools): Name, Description, Raw.
	ToolCustom
	// ToolBuiltin is a tool the provider runs (web search, code execution,
	// Anthropic's server tools, OpenAI's built-in tools): Type names it,
	// Raw is the client's definition. Only an upstream of the client's
	// API can serve it.
	ToolBuiltin
)

// Tool is one tool the model may call.
type Tool struct {
	Kind ToolKind
	// Name is the tool's name (a builtin's name, when it has one).
	Name string
	// Description tells the model what the tool does.
	Description string
	// Schema is a function's input schema (a JSON Schema object).
	Schema json.RawMessage
	// Strict asks for strict schema adherence, nil if unset.
	Strict *bool
	// Type is a builtin's type as the client named it (web_search,
	// web_search_20250305, code_execution, ...).
	Type string
	// Raw is the client's own definition of a custom or builtin tool.
	Raw json.RawMessage
	// Cache, when set, is a prompt-cache breakpoint after this tool.
	Cache *CacheBreakpoint
}

// ToolChoiceMode is how the model must use tools.
type ToolChoiceMode uint8

// The tool choice modes. The zero value is ToolAuto.
const (
	// ToolAuto: the model decides (the default).
	ToolAuto ToolChoiceMode = iota
	// ToolNone: the model must not call a tool.
	ToolNone
	// ToolAny: the model must call some tool (OpenAI's required,
	// Anthropic's any).
	ToolAny
	// ToolNamed: the model must call tool Name.
	ToolNamed
)

// ToolChoice says whether and which tool the model must call.
type ToolChoice struct {
	Mode ToolChoiceMode
	// Name is the forced tool (ToolNamed).
	Name string
	// NoParallel is true when the client asked for at most one tool call
	// per turn (parallel_tool_calls false, disable_parallel_tool_use).
	NoParallel bool
}

// Sampling holds the generation settings; nil pointers are unset (the
// upstream's default).
type Sampling struct {
	// MaxTokens is the client's output limit, 0 for none.
	MaxTokens int
	// Temperature, TopP and TopK shape sampling.
	Temperature, TopP *float64
	TopK              *int
	// PresencePenalty and FrequencyPenalty are OpenAI's penalties.
	PresencePenalty, FrequencyPenalty *float64
	// Seed asks for deterministic sampling.
	Seed *int64
	// Stop lists the stop sequences.
	Stop []string
}

// Output holds the shape of the answer.
type Output struct {
	// Format is the answer's format: "" or "text" for free text,
	// "json_object", or "json_schema" with Schema (and SchemaName,
	// StrictSchema, SchemaDescription).
	Format       string
	Schema       json.RawMessage
	SchemaName   string
	StrictSchema bool
	// SchemaDescription describes the schema (json_schema's description),
	// "" if none.
	SchemaDescription string
	// Reasoning asks for (or limits) the model's reasoning.
	Reasoning ReasoningConfig
	// Choices is the number of answers asked for (OpenAI's n), 0 or 1
	// for one.
	Choices int
}

// ReasoningConfig is what the client asked of the model's reasoning.
type ReasoningConfig struct {
	// Mode is "" (unset: the model's default), "enabled" (with
	// BudgetTokens), "adaptive" (the model decides how much) or
	// "disabled".
	Mode string
	// BudgetTokens is the reasoning budget when Mode is enabled.
	BudgetTokens int
	// Effort is an effort level (minimal, low, medium, high), "" if unset.
	Effort string
	// Summary asks for reasoning summaries (OpenAI's reasoning.summary:
	// auto, concise, detailed), "" if unset.
	Summary string
}

// The model families whose reasoning a thinking or redacted thinking block
// can carry. Only the family that made a signature (or encrypted data) can
// verify it, so an adapter sends earlier turns' reasoning to its upstream
// only when MadeBy names that upstream's family, and drops it otherwise (as
// every API that cannot read it expects).
const (
	// ReasoningClaude: Anthropic's models, on any platform (the Anthropic
	// API, Bedrock's InvokeModel and Converse).
	ReasoningClaude = "claude"
	// ReasoningOpenAI: an OpenAI Responses reasoning item (summaries and
	// encrypted content).
	ReasoningOpenAI = "openai"
	// ReasoningGemini: a Gemini thought signature.
	ReasoningGemini = "gemini"
)

// GeminiSignaturePrefix marks a Gemini thought signature that travels to a
// client of another API as a thinking block's signature (and comes back
// with the prefix).
const GeminiSignaturePrefix = "gemini:"

// MadeBy returns the model family that made a thinking or redacted
// thinking block: Origin when the ingress set it, ReasoningGemini for a
// signature with GeminiSignaturePrefix, else ReasoningClaude (the thinking
// blocks of the Messages API, the one client API whose blocks carry no
// origin of their own).
func (b *Block) MadeBy() string {
	switch {
	case b.Origin != "":
		return b.Origin
	case strings.HasPrefix(b.Signature, GeminiSignaturePrefix):
		return ReasoningGemini
	}
	return ReasoningClaude
}

// SendsToClaude reports whether an earlier turn's thinking or redacted
// thinking block can go back to a Claude model: Claude made it, and a
// thinking block has its signature (Claude refuses unsigned thinking).
func (b *Block) SendsToClaude() bool {
	return b.MadeBy() == ReasoningClaude && (b.Type != BlockThinking || b.Signature != "")
}

// BlocksText returns the concatenated text of blocks (text blocks only), for
// estimates and checks that read what a prompt says.
func BlocksText(blocks []Block) string {
	n := 0
	for i := range blocks {
		if blocks[i].Type == BlockText {
			n += len(blocks[i].Text)
		}
	}
	b := make([]byte, 0, n)
	for i := range blocks {
		if blocks[i].Type == BlockText {
			b = append(b, blocks[i].Text...)
		}
	}
	return string(b)
}

// Walk calls fn for every block of the prompt: the system prompt, each
// message's blocks, and the blocks inside tool results, in order. It is
// the one traversal budgets, moderation and the cache key read, so a block
// anywhere in the prompt is seen by each of them.
func (p *Prompt) Walk(fn func(b *Block)) {
	var walk func(bs []Block)
	walk = func(bs []Block) {
		for i := range bs {
			fn(&bs[i])
			if len(bs[i].Content) > 0 {
				walk(bs[i].Content)
			}
		}
	}
	walk(p.System)
	for i := range p.Messages {
		walk(p.Messages[i].Content)
	}
}

// WalkText calls fn with every piece of text the model reads in the
// prompt, in order: through Walk, each block's text (text, thinking,
// refusal), a tool use's name and arguments, a document's title, context
// and, for a text/* document, its bytes; then each tool's name,
// description and schema (a custom or built-in tool's whole client
// definition). Budgets and moderation read
// a prompt through it, so text anywhere (an assistant turn, a tool result,
// a tool definition) is counted and checked. The text fn gets is valid only
// during the call (byte fields are viewed, not copied): fn copies what it
// keeps.
func (p *Prompt) WalkText(fn func(text string)) {
	emit := func(s string) {
		if s != "" {
			fn(s)
		}
	}
	view := func(b []byte) string {
		if len(b) == 0 {
			return ""
		}
		return unsafe.String(unsafe.SliceData(b), len(b))
	}
	p.Walk(func(b *Block) {
		emit(b.Text)
		emit(b.ToolName)
		emit(view(b.Input))
		emit(b.Title)
		emit(b.Context)
		if b.Type == BlockDocument && strings.HasPrefix(b.MediaType, "text/") {
			emit(view(b.Data))
		}
	})
	for i := range p.Tools {
		t := &p.Tools[i]
		if t.Kind != ToolFunction && len(t.Raw) > 0 {
			emit(view(t.Raw)) // the whole definition: its name and description too
			continue
		}
		emit(t.Name)
		emit(t.Description)
		emit(view(t.Schema))
	}
}
