package bedrockwire

import "encoding/json"

// The request of Converse and ConverseStream (the same members; modelId is
// in the path). Union members (a content block is exactly one of text,
// image, toolUse, ...) are pointers, nil when absent; blobs are base64 in
// the JSON and decode to bytes.

// ConverseRequest is a Converse or ConverseStream request body.
type ConverseRequest struct {
	Messages                          []Message         `json:"messages"`
	System                            []SystemBlock     `json:"system,omitempty"`
	InferenceConfig                   *InferenceConfig  `json:"inferenceConfig,omitempty"`
	ToolConfig                        *ToolConfig       `json:"toolConfig,omitempty"`
	GuardrailConfig                   json.RawMessage   `json:"guardrailConfig,omitempty"`
	AdditionalModelRequestFields      json.RawMessage   `json:"additionalModelRequestFields,omitempty"`
	PromptVariables                   json.RawMessage   `json:"promptVariables,omitempty"`
	AdditionalModelResponseFieldPaths []string          `json:"additionalModelResponseFieldPaths,omitempty"`
	RequestMetadata                   map[string]string `json:"requestMetadata,omitempty"`
	PerformanceConfig                 json.RawMessage   `json:"performanceConfig,omitempty"`
	ServiceTier                       json.RawMessage   `json:"serviceTier,omitempty"`
	OutputConfig                      json.RawMessage   `json:"outputConfig,omitempty"`
}

// ConverseMembers are the top-level members of a Converse request, as the
// service model spells them.
var ConverseMembers = []string{"messages", "system", "inferenceConfig", "toolConfig", "guardrailConfig",
	"additionalModelRequestFields", "promptVariables", "additionalModelResponseFieldPaths", "requestMetadata",
	"performanceConfig", "serviceTier", "outputConfig"}

// Message is one turn: role user or assistant.
type Message struct {
	Role    string         `json:"role"`
	Content []ContentBlock `json:"content"`
}

// ContentBlock is one block of a message: exactly one member is set.
type ContentBlock struct {
	Text             *string           `json:"text,omitempty"`
	Image            *ImageBlock       `json:"image,omitempty"`
	Document         *DocumentBlock    `json:"document,omitempty"`
	ToolUse          *ToolUseBlock     `json:"toolUse,omitempty"`
	ToolResult       *ToolResultBlock  `json:"toolResult,omitempty"`
	ReasoningContent *ReasoningContent `json:"reasoningContent,omitempty"`
	CachePoint       *CachePoint       `json:"cachePoint,omitempty"`
	Video            json.RawMessage   `json:"video,omitempty"`
	Audio            json.RawMessage   `json:"audio,omitempty"`
	GuardContent     json.RawMessage   `json:"guardContent,omitempty"`
	CitationsContent json.RawMessage   `json:"citationsContent,omitempty"`
	SearchResult     json.RawMessage   `json:"searchResult,omitempty"`
	ToolAddition     json.RawMessage   `json:"toolAddition,omitempty"`
	ToolRemoval      json.RawMessage   `json:"toolRemoval,omitempty"`
}

// SystemBlock is one block of the system prompt: text or a cache point
// (or guardContent).
type SystemBlock struct {
	Text         *string         `json:"text,omitempty"`
	CachePoint   *CachePoint     `json:"cachePoint,omitempty"`
	GuardContent json.RawMessage `json:"guardContent,omitempty"`
}

// ImageBlock is an image: format (png, jpeg, gif, webp) and source.
type ImageBlock struct {
	Format string       `json:"format"`
	Source *MediaSource `json:"source"`
}

// DocumentBlock is a document: format (pdf, csv, doc, docx, xls, xlsx,
// html, txt, md), name, source, and optional context and citations.
type DocumentBlock struct {
	Format    string       `json:"format,omitempty"`
	Name      string       `json:"name"`
	Source    *MediaSource `json:"source"`
	Context   string       `json:"context,omitempty"`
	Citations *Citations   `json:"citations,omitempty"`
}

// Citations is a document's citations setting.
type Citations struct {
	Enabled bool `json:"enabled"`
}

// MediaSource is where an image's or a document's bytes are: inline bytes,
// an S3 location, or (documents) text.
type MediaSource struct {
	Bytes      []byte          `json:"bytes,omitempty"`
	S3Location *S3Location     `json:"s3Location,omitempty"`
	Text       *string         `json:"text,omitempty"`
	Content    json.RawMessage `json:"content,omitempty"`
}

// S3Location names an S3 object.
type S3Location struct {
	URI         string `json:"uri"`
	BucketOwner string `json:"bucketOwner,omitempty"`
}

// ToolUseBlock is a tool call the model made.
type ToolUseBlock struct {
	ToolUseID string          `json:"toolUseId"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	Type      string          `json:"type,omitempty"`
}

// ToolResultBlock is the result of tool call ToolUseID.
type ToolResultBlock struct {
	ToolUseID string              `json:"toolUseId"`
	Content   []ToolResultContent `json:"content"`
	Status    string              `json:"status,omitempty"` // success or error
}

// ToolResultContent is one block of a tool result: exactly one member set.
type ToolResultContent struct {
	JSON         json.RawMessage `json:"json,omitempty"`
	Text         *string         `json:"text,omitempty"`
	Image        *ImageBlock     `json:"image,omitempty"`
	Document     *DocumentBlock  `json:"document,omitempty"`
	Video        json.RawMessage `json:"video,omitempty"`
	SearchResult json.RawMessage `json:"searchResult,omitempty"`
}

// ReasoningContent is an earlier turn's reasoning: its text with a
// signature, or redacted (opaque bytes).
type ReasoningContent struct {
	ReasoningText   *ReasoningText `json:"reasoningText,omitempty"`
	RedactedContent []byte         `json:"redactedContent,omitempty"`
}

// ReasoningText is visible reasoning and its signature.
type ReasoningText struct {
	Text      string `json:"text"`
	Signature string `json:"signature,omitempty"`
}

// CachePoint is a prompt-cache breakpoint: type "default", ttl "5m" or "1h".
type CachePoint struct {
	Type string `json:"type"`
	TTL  string `json:"ttl,omitempty"`
}

// InferenceConfig holds the generation settings.
type InferenceConfig struct {
	MaxTokens     *int     `json:"maxTokens,omitempty"`
	Temperature   *float64 `json:"temperature,omitempty"`
	TopP          *float64 `json:"topP,omitempty"`
	StopSequences []string `json:"stopSequences,omitempty"`
}

// ToolConfig lists the tools and the tool choice.
type ToolConfig struct {
	Tools      []Tool      `json:"tools"`
	ToolChoice *ToolChoice `json:"toolChoice,omitempty"`
}

// Tool is a tool specification, a system tool, or a cache point.
type Tool struct {
	ToolSpec   *ToolSpec       `json:"toolSpec,omitempty"`
	SystemTool json.RawMessage `json:"systemTool,omitempty"`
	CachePoint *CachePoint     `json:"cachePoint,omitempty"`
}

// ToolSpec is a function the client runs.
type ToolSpec struct {
	Name        string      `json:"name"`
	Description string      `json:"description,omitempty"`
	InputSchema InputSchema `json:"inputSchema"`
	Strict      *bool       `json:"strict,omitempty"`
}

// InputSchema holds a tool's JSON schema.
type InputSchema struct {
	JSON json.RawMessage `json:"json"`
}

// ToolChoice is exactly one of auto, any or tool.
type ToolChoice struct {
	Auto *struct{}     `json:"auto,omitempty"`
	Any  *struct{}     `json:"any,omitempty"`
	Tool *SpecificTool `json:"tool,omitempty"`
}

// SpecificTool names the tool the model must call.
type SpecificTool struct {
	Name string `json:"name"`
}

// CountTokensRequest is a CountTokens body: exactly one of a Converse
// request's counted members or an InvokeModel body.
type CountTokensRequest struct {
	Input struct {
		Converse    json.RawMessage `json:"converse,omitempty"`
		InvokeModel *struct {
			Body []byte `json:"body"`
		} `json:"invokeModel,omitempty"`
	} `json:"input"`
}

// DocumentMediaTypes maps a DocumentBlock's format to its media type.
var DocumentMediaTypes = map[string]string{
	"pdf": "application/pdf", "txt": "text/plain", "md": "text/markdown", "html": "text/html", "csv": "text/csv",
	"doc": "application/msword", "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
	"xls": "application/vnd.ms-excel", "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
}

// ImageFormats are the formats of an ImageBlock (the media type is
// "image/" + format).
var ImageFormats = map[string]bool{"png": true, "jpeg": true, "gif": true, "webp": true}
