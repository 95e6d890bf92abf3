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
