package gemini

import "github.com/llmgw/llmgw/pkg/wire/geminiwire"

// The adapter's names for the Gemini wire types (pkg/wire/geminiwire, their
// one home).
type (
	request               = geminiwire.Request
	content               = geminiwire.Content
	part                  = geminiwire.Part
	blob                  = geminiwire.Blob
	fileData              = geminiwire.FileData
	functionCall          = geminiwire.FunctionCall
	functionResponse      = geminiwire.FunctionResponse
	tool                  = geminiwire.Tool
	googleSearch          = geminiwire.GoogleSearch
	functionDeclaration   = geminiwire.FunctionDeclaration
	toolConfig            = geminiwire.ToolConfig
	functionCallingConfig = geminiwire.FunctionCallingConfig
	generationConfig      = geminiwire.GenerationConfig
	thinkingConfig        = geminiwire.ThinkingConfig
	schema                = geminiwire.Schema
	response              = geminiwire.Response
	candidate             = geminiwire.Candidate
	promptFeedback        = geminiwire.PromptFeedback
	usageMetadata         = geminiwire.UsageMetadata
	errorBody             = geminiwire.ErrorBody
	apiError              = geminiwire.APIError
	errorDetail           = geminiwire.ErrorDetail
)

// googleSearchTool is the built-in tool type a client names Gemini's
// grounding with Google Search by (exchange.Tool.Type): sent as
// {"googleSearch": {}}.
const googleSearchTool = "google_search"
