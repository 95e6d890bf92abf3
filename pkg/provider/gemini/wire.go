package gemini

import "encoding/json"

// The Gemini API's wire format (v1beta, generativelanguage.googleapis.com),
// only as much of it as the adapter writes and reads. Field names are the
// API's JSON (lowerCamelCase) names.

// request is a GenerateContentRequest body.
type request struct {
	Contents          []content         `json:"contents"`
	SystemInstruction *content          `json:"systemInstruction,omitempty"`
	Tools             []tool            `json:"tools,omitempty"`
	ToolConfig        *toolConfig       `json:"toolConfig,omitempty"`
	GenerationConfig  *generationConfig `json:"generationConfig,omitempty"`
}

// content is one turn: role "user" or "model" (none for systemInstruction).
type content struct {
	Role  string `json:"role,omitempty"`
	Parts []part `json:"parts"`
}

// part is one piece of a turn. Exactly one of its data fields is set.
type part struct {
	Text             string            `json:"text,omitempty"`
	Thought          bool              `json:"thought,omitempty"`
	InlineData       *blob             `json:"inlineData,omitempty"`
	FileData         *fileData         `json:"fileData,omitempty"`
	FunctionCall     *functionCall     `json:"functionCall,omitempty"`
	FunctionResponse *functionResponse `json:"functionResponse,omitempty"`
	// ThoughtSignature is base64 bytes the model attaches to a part; Gemini
	// 3 models require it back on the function calls of earlier turns.
	ThoughtSignature string `json:"thoughtSignature,omitempty"`
}

// blob is inline media: base64 data and its IANA media type.
type blob struct {
	MimeType string `json:"mimeType"`
	Data     string `json:"data"`
}

// fileData points at a file uploaded through the Files API.
type fileData struct {
	MimeType string `json:"mimeType,omitempty"`
	FileURI  string `json:"fileUri"`
}

// functionCall is a call the model makes; Args is a JSON object.
type functionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

// functionResponse is a tool's result; Response is a JSON object.
type functionResponse struct {
	ID       string          `json:"id,omitempty"`
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response"`
}

// tool holds function declarations.
type tool struct {
	FunctionDeclarations []functionDeclaration `json:"functionDeclarations"`
}

// functionDeclaration describes one callable function.
type functionDeclaration struct {
	Name        string  `json:"name"`
	Description string  `json:"description,omitempty"`
	Parameters  *schema `json:"parameters,omitempty"`
}

// toolConfig is the function-calling mode.
type toolConfig struct {
	FunctionCallingConfig functionCallingConfig `json:"functionCallingConfig"`
}

// functionCallingConfig: Mode AUTO, ANY or NONE; AllowedFunctionNames
// narrows ANY.
type functionCallingConfig struct {
	Mode                 string   `json:"mode"`
	AllowedFunctionNames []string `json:"allowedFunctionNames,omitempty"`
}

// generationConfig holds sampling, limits, output format and thinking.
type generationConfig struct {
	StopSequences    []string        `json:"stopSequences,omitempty"`
	ResponseMimeType string          `json:"responseMimeType,omitempty"`
	ResponseSchema   *schema         `json:"responseSchema,omitempty"`
	CandidateCount   *int            `json:"candidateCount,omitempty"`
	MaxOutputTokens  *int            `json:"maxOutputTokens,omitempty"`
	Temperature      *float64        `json:"temperature,omitempty"`
	TopP             *float64        `json:"topP,omitempty"`
	TopK             *int            `json:"topK,omitempty"`
	Seed             *int64          `json:"seed,omitempty"`
	PresencePenalty  *float64        `json:"presencePenalty,omitempty"`
	FrequencyPenalty *float64        `json:"frequencyPenalty,omitempty"`
	ThinkingConfig   *thinkingConfig `json:"thinkingConfig,omitempty"`
}

// thinkingConfig asks for thought summaries and bounds thinking: a token
// budget (Gemini 2.5) or a level (Gemini 3).
type thinkingConfig struct {
	IncludeThoughts bool   `json:"includeThoughts,omitempty"`
	ThinkingBudget  *int   `json:"thinkingBudget,omitempty"`
	ThinkingLevel   string `json:"thinkingLevel,omitempty"`
}

// schema is the API's Schema object (an OpenAPI 3.0 subset). Type is one
// of STRING, NUMBER, INTEGER, BOOLEAN, ARRAY, OBJECT, NULL.
type schema struct {
	Type             string             `json:"type,omitempty"`
	Format           string             `json:"format,omitempty"`
	Title            string             `json:"title,omitempty"`
	Description      string             `json:"description,omitempty"`
	Nullable         bool               `json:"nullable,omitempty"`
	Enum             []string           `json:"enum,omitempty"`
	Items            *schema            `json:"items,omitempty"`
	MinItems         *int64             `json:"minItems,omitempty"`
	MaxItems         *int64             `json:"maxItems,omitempty"`
	Properties       map[string]*schema `json:"properties,omitempty"`
	PropertyOrdering []string           `json:"propertyOrdering,omitempty"`
	Required         []string           `json:"required,omitempty"`
	MinProperties    *int64             `json:"minProperties,omitempty"`
	MaxProperties    *int64             `json:"maxProperties,omitempty"`
	MinLength        *int64             `json:"minLength,omitempty"`
	MaxLength        *int64             `json:"maxLength,omitempty"`
	Pattern          string             `json:"pattern,omitempty"`
	Minimum          *float64           `json:"minimum,omitempty"`
	Maximum          *float64           `json:"maximum,omitempty"`
	AnyOf            []*schema          `json:"anyOf,omitempty"`
	Default          json.RawMessage    `json:"default,omitempty"`
	Example          json.RawMessage    `json:"example,omitempty"`
}

// response is a GenerateContentResponse: a whole body, or one SSE chunk.
type response struct {
	Candidates     []candidate     `json:"candidates"`
	PromptFeedback *promptFeedback `json:"promptFeedback"`
	UsageMetadata  *usageMetadata  `json:"usageMetadata"`
	ModelVersion   string          `json:"modelVersion"`
	ResponseID     string          `json:"responseId"`
	// Error is set on an error object sent where a response was due.
	Error *apiError `json:"error"`
}

// candidate is one generated answer (the adapter asks for one).
type candidate struct {
	Content      *content `json:"content"`
	FinishReason string   `json:"finishReason"`
	Index        int      `json:"index"`
}

// promptFeedback says why a prompt was blocked (BlockReason SAFETY, OTHER,
// BLOCKLIST, PROHIBITED_CONTENT, IMAGE_SAFETY...).
type promptFeedback struct {
	BlockReason string `json:"blockReason"`
}

// usageMetadata counts tokens. PromptTokenCount includes the cached
// tokens; ThoughtsTokenCount is billed as output next to
// CandidatesTokenCount.
type usageMetadata struct {
	PromptTokenCount        int `json:"promptTokenCount"`
	CandidatesTokenCount    int `json:"candidatesTokenCount"`
	CachedContentTokenCount int `json:"cachedContentTokenCount"`
	ThoughtsTokenCount      int `json:"thoughtsTokenCount"`
	ToolUsePromptTokenCount int `json:"toolUsePromptTokenCount"`
	TotalTokenCount         int `json:"totalTokenCount"`
}

// errorBody is the API's error envelope (google.rpc.Status in JSON).
type errorBody struct {
	Error apiError `json:"error"`
}

// apiError is a google.rpc.Status: an HTTP code, the canonical status name
// (RESOURCE_EXHAUSTED, UNAVAILABLE, INVALID_ARGUMENT...), a message and
// typed details (RetryInfo, ErrorInfo, QuotaFailure...).
type apiError struct {
	Code    int           `json:"code"`
	Message string        `json:"message"`
	Status  string        `json:"status"`
	Details []errorDetail `json:"details"`
}

// errorDetail is one detail; only RetryInfo's retryDelay and ErrorInfo's
// reason are read.
type errorDetail struct {
	Type       string `json:"@type"`
	RetryDelay string `json:"retryDelay"`
	Reason     string `json:"reason"`
}
