package geminiwire

import "encoding/json"

// Package geminiwire holds the Gemini API's wire format (v1beta,
// generativelanguage.googleapis.com), only as much of it as the gateway
// writes and reads: the generateContent request and response, the streamed
// chunks (each a response) and the error body. Field names are the API's
// JSON (lowerCamelCase) names. pkg/provider/gemini translates the canonical
// Prompt into it and its answers into canonical events.

// Request is a GenerateContentRequest body.
type Request struct {
	Contents          []Content         `json:"contents"`
	SystemInstruction *Content          `json:"systemInstruction,omitempty"`
	Tools             []Tool            `json:"tools,omitempty"`
	ToolConfig        *ToolConfig       `json:"toolConfig,omitempty"`
	GenerationConfig  *GenerationConfig `json:"generationConfig,omitempty"`
}

// Content is one turn: role "user" or "model" (none for systemInstruction).
type Content struct {
	Role  string `json:"role,omitempty"`
	Parts []Part `json:"parts"`
}

// Part is one piece of a turn. Exactly one of its data fields is set.
type Part struct {
	Text             string            `json:"text,omitempty"`
	Thought          bool              `json:"thought,omitempty"`
	InlineData       *Blob             `json:"inlineData,omitempty"`
	FileData         *FileData         `json:"fileData,omitempty"`
	FunctionCall     *FunctionCall     `json:"functionCall,omitempty"`
	FunctionResponse *FunctionResponse `json:"functionResponse,omitempty"`
	// ThoughtSignature is base64 bytes the model attaches to a part; Gemini
	// 3 models require it back on the function calls of earlier turns.
	ThoughtSignature string `json:"thoughtSignature,omitempty"`
}

// Blob is inline media: base64 data and its IANA media type.
type Blob struct {
	MimeType string `json:"mimeType"`
	Data     string `json:"data"`
}

// FileData points at a file uploaded through the Files API.
type FileData struct {
	MimeType string `json:"mimeType,omitempty"`
	FileURI  string `json:"fileUri"`
}

// FunctionCall is a call the model makes; Args is a JSON object.
type FunctionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

// FunctionResponse is a tool's result; Response is a JSON object.
type FunctionResponse struct {
	ID       string          `json:"id,omitempty"`
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response"`
}

// Tool holds function declarations.
type Tool struct {
	FunctionDeclarations []FunctionDeclaration `json:"functionDeclarations,omitempty"`
	// GoogleSearch turns on grounding with Google Search (a tool of its
	// own: {"googleSearch": {}}).
	GoogleSearch *GoogleSearch `json:"googleSearch,omitempty"`
}

// GoogleSearch is the Google Search grounding tool; it takes no settings
// the gateway sends.
type GoogleSearch struct{}

// FunctionDeclaration describes one callable function.
type FunctionDeclaration struct {
	Name        string  `json:"name"`
	Description string  `json:"description,omitempty"`
	Parameters  *Schema `json:"parameters,omitempty"`
}

// ToolConfig is the function-calling mode.
type ToolConfig struct {
	FunctionCallingConfig FunctionCallingConfig `json:"functionCallingConfig"`
}

// FunctionCallingConfig: Mode AUTO, ANY or NONE; AllowedFunctionNames
// narrows ANY.
type FunctionCallingConfig struct {
	Mode                 string   `json:"mode"`
	AllowedFunctionNames []string `json:"allowedFunctionNames,omitempty"`
}

// GenerationConfig holds sampling, limits, output format and thinking.
type GenerationConfig struct {
	StopSequences    []string        `json:"stopSequences,omitempty"`
	ResponseMimeType string          `json:"responseMimeType,omitempty"`
	ResponseSchema   *Schema         `json:"responseSchema,omitempty"`
	CandidateCount   *int            `json:"candidateCount,omitempty"`
	MaxOutputTokens  *int            `json:"maxOutputTokens,omitempty"`
	Temperature      *float64        `json:"temperature,omitempty"`
	TopP             *float64        `json:"topP,omitempty"`
	TopK             *int            `json:"topK,omitempty"`
	Seed             *int64          `json:"seed,omitempty"`
	PresencePenalty  *float64        `json:"presencePenalty,omitempty"`
	FrequencyPenalty *float64        `json:"frequencyPenalty,omitempty"`
	ThinkingConfig   *ThinkingConfig `json:"thinkingConfig,omitempty"`
}

// ThinkingConfig asks for thought summaries and bounds thinking: a token
// budget (Gemini 2.5) or a level (Gemini 3).
type ThinkingConfig struct {
	IncludeThoughts bool   `json:"includeThoughts,omitempty"`
	ThinkingBudget  *int   `json:"thinkingBudget,omitempty"`
	ThinkingLevel   string `json:"thinkingLevel,omitempty"`
}

// Schema is the API's Schema object (an OpenAPI 3.0 subset). Type is one
// of STRING, NUMBER, INTEGER, BOOLEAN, ARRAY, OBJECT, NULL.
type Schema struct {
	Type             string             `json:"type,omitempty"`
	Format           string             `json:"format,omitempty"`
	Title            string             `json:"title,omitempty"`
	Description      string             `json:"description,omitempty"`
	Nullable         bool               `json:"nullable,omitempty"`
	Enum             []string           `json:"enum,omitempty"`
	Items            *Schema            `json:"items,omitempty"`
	MinItems         *int64             `json:"minItems,omitempty"`
	MaxItems         *int64             `json:"maxItems,omitempty"`
	Properties       map[string]*Schema `json:"properties,omitempty"`
	PropertyOrdering []string           `json:"propertyOrdering,omitempty"`
	Required         []string           `json:"required,omitempty"`
	MinProperties    *int64             `json:"minProperties,omitempty"`
	MaxProperties    *int64             `json:"maxProperties,omitempty"`
	MinLength        *int64             `json:"minLength,omitempty"`
	MaxLength        *int64             `json:"maxLength,omitempty"`
	Pattern          string             `json:"pattern,omitempty"`
	Minimum          *float64           `json:"minimum,omitempty"`
	Maximum          *float64           `json:"maximum,omitempty"`
	AnyOf            []*Schema          `json:"anyOf,omitempty"`
	Default          json.RawMessage    `json:"default,omitempty"`
	Example          json.RawMessage    `json:"example,omitempty"`
}

// Response is a GenerateContentResponse: a whole body, or one SSE chunk.
type Response struct {
	Candidates     []Candidate     `json:"candidates"`
	PromptFeedback *PromptFeedback `json:"promptFeedback"`
	UsageMetadata  *UsageMetadata  `json:"usageMetadata"`
	ModelVersion   string          `json:"modelVersion"`
	ResponseID     string          `json:"responseId"`
	// Error is set on an error object sent where a response was due.
	Error *APIError `json:"error"`
}

// Candidate is one generated answer (the adapter asks for one).
type Candidate struct {
	Content      *Content `json:"content"`
	FinishReason string   `json:"finishReason"`
	Index        int      `json:"index"`
	// GroundingMetadata is set on an answer grounded with Google Search.
	GroundingMetadata *GroundingMetadata `json:"groundingMetadata,omitempty"`
}

// GroundingMetadata is what grounding with Google Search did: the search
// queries it ran (each billed on Gemini 3 models) and the web sources it
// grounded the answer in (a grounded prompt, billed once on Gemini 2
// models).
type GroundingMetadata struct {
	WebSearchQueries []string          `json:"webSearchQueries,omitempty"`
	GroundingChunks  []json.RawMessage `json:"groundingChunks,omitempty"`
}

// Grounded reports whether the answer was grounded: it ran a search or
// cites a source.
func (g *GroundingMetadata) Grounded() bool {
	return g != nil && (len(g.WebSearchQueries) > 0 || len(g.GroundingChunks) > 0)
}

// PromptFeedback says why a prompt was blocked (BlockReason SAFETY, OTHER,
// BLOCKLIST, PROHIBITED_CONTENT, IMAGE_SAFETY...).
type PromptFeedback struct {
	BlockReason string `json:"blockReason"`
}

// UsageMetadata counts tokens. PromptTokenCount includes the cached
// tokens; ThoughtsTokenCount is billed as output next to
// CandidatesTokenCount.
type UsageMetadata struct {
	PromptTokenCount        int `json:"promptTokenCount"`
	CandidatesTokenCount    int `json:"candidatesTokenCount"`
	CachedContentTokenCount int `json:"cachedContentTokenCount"`
	ThoughtsTokenCount      int `json:"thoughtsTokenCount"`
	ToolUsePromptTokenCount int `json:"toolUsePromptTokenCount"`
	TotalTokenCount         int `json:"totalTokenCount"`
}

// ErrorBody is the API's error envelope (google.rpc.Status in JSON).
type ErrorBody struct {
	Error APIError `json:"error"`
}

// APIError is a google.rpc.Status: an HTTP code, the canonical status name
// (RESOURCE_EXHAUSTED, UNAVAILABLE, INVALID_ARGUMENT...), a message and
// typed details (RetryInfo, ErrorInfo, QuotaFailure...).
type APIError struct {
	Code    int           `json:"code"`
	Message string        `json:"message"`
	Status  string        `json:"status"`
	Details []ErrorDetail `json:"details"`
}

// ErrorDetail is one detail; only RetryInfo's retryDelay and ErrorInfo's
// reason are read.
type ErrorDetail struct {
	Type       string `json:"@type"`
	RetryDelay string `json:"retryDelay"`
	Reason     string `json:"reason"`
}
