package exchange

import (
	"slices"
	"strings"

	"github.com/llmgw/llmgw/pkg/config"
)

// FeeKind is the fee kind of a builtin tool type as a client names it
// (Tool.Type), one of config.FeeKinds: Anthropic's web_search_20250305, web_fetch_20250910 and
// code_execution_20250825, OpenAI Responses' web_search,
// web_search_preview, file_search and code_interpreter, Gemini's
// google_search (grounding, config.FeeGroundedPrompt: priced per grounded
// answer or, with web_search, per search query). It is "" for a
// builtin the provider does not bill per use (Anthropic's client-run
// bash, text_editor, computer, memory; OpenAI's function, custom).
func FeeKind(typ string) string {
	switch {
	case strings.HasPrefix(typ, "web_search"):
		return config.FeeWebSearch
	case strings.HasPrefix(typ, "web_fetch"):
		return config.FeeWebFetch
	case strings.HasPrefix(typ, "code_execution"), typ == "code_interpreter":
		return config.FeeCodeExecution
	case typ == "file_search":
		return config.FeeFileSearch
	case typ == "google_search":
		return config.FeeGroundedPrompt
	}
	return ""
}

// ToolCalls counts the server-side tool use an upstream reported billing
// (Anthropic's usage.server_tool_use and the container its answer ran in;
// OpenAI Responses' *_call output items; Gemini's groundingMetadata), by
// fee kind.
type ToolCalls struct {
	// WebSearch counts web searches (Anthropic's web_search_requests,
	// Responses' web_search_call items, Gemini's webSearchQueries).
	WebSearch     int `json:"web_search,omitempty"`
	WebFetch      int `json:"web_fetch,omitempty"`
	CodeExecution int `json:"code_execution,omitempty"`
	FileSearch    int `json:"file_search,omitempty"`
	// GroundedPrompts counts answers grounded with Google Search (0 or 1
	// per Gemini answer that carries grounding metadata).
	GroundedPrompts int `json:"grounded_prompts,omitempty"`
	// Containers counts the code-execution containers the answer ran in
	// (0 or 1: Anthropic's container, named by the answer or implied by a
	// code-execution block). Anthropic bills container time, not calls:
	// priced per hour (config.Price.ToolHours), at least
	// config.MinContainerTime each.
	Containers int `json:"containers,omitempty"`
}

// Get is the count of one fee kind (0 for an unknown kind).
func (c ToolCalls) Get(kind string) int {
	switch kind {
	case config.FeeWebSearch:
		return c.WebSearch
	case config.FeeWebFetch:
		return c.WebFetch
	case config.FeeCodeExecution:
		return c.CodeExecution
	case config.FeeFileSearch:
		return c.FileSearch
	case config.FeeGroundedPrompt:
		return c.GroundedPrompts
	}
	return 0
}

// ToolCallsOf is n calls of one fee kind (zero for an unknown kind).
func ToolCallsOf(kind string, n int) ToolCalls {
	switch kind {
	case config.FeeWebSearch:
		return ToolCalls{WebSearch: n}
	case config.FeeWebFetch:
		return ToolCalls{WebFetch: n}
	case config.FeeCodeExecution:
		return ToolCalls{CodeExecution: n}
	case config.FeeFileSearch:
		return ToolCalls{FileSearch: n}
	case config.FeeGroundedPrompt:
		return ToolCalls{GroundedPrompts: n}
	}
	return ToolCalls{}
}

// Add is c plus d.
func (c ToolCalls) Add(d ToolCalls) ToolCalls {
	return ToolCalls{WebSearch: c.WebSearch + d.WebSearch, WebFetch: c.WebFetch + d.WebFetch,
		CodeExecution: c.CodeExecution + d.CodeExecution, FileSearch: c.FileSearch + d.FileSearch,
		GroundedPrompts: c.GroundedPrompts + d.GroundedPrompts, Containers: c.Containers + d.Containers}
}

// FeeTools returns the fee kinds of the builtin tools p declares, each
// once, with the tool that declared it first.
func FeeTools(p *Prompt) (kinds []string, tools []*Tool) {
	if p == nil {
		return nil, nil
	}
	for i := range p.Tools {
		t := &p.Tools[i]
		if t.Kind != ToolBuiltin {
			continue
		}
		k := FeeKind(t.Type)
		if k == "" || slices.Contains(kinds, k) {
			continue
		}
		kinds, tools = append(kinds, k), append(tools, t)
	}
	return kinds, tools
}

// IsZero reports whether c counts nothing.
func (c ToolCalls) IsZero() bool { return c == ToolCalls{} }
