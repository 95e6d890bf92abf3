package exchange

// EmbedRequest is an embeddings request (API Embeddings) in canonical form:
// what a translating adapter (Bedrock's Titan and Cohere models) reads. The
// client's own bytes stay in Request.Body for an upstream that speaks the
// embeddings API.
type EmbedRequest struct {
	// Inputs are the texts to embed, in order (input as a string or an
	// array of strings).
	Inputs []string
	// Tokens holds the inputs when the client sent token arrays (input as
	// []int or [][]int); Inputs is then nil. Only a passthrough target can
	// serve them: translated targets refuse.
	Tokens [][]int
	// Dimensions is the requested vector size, 0 for the model's default.
	Dimensions int
	// EncodingFormat is "float" (the default) or "base64".
	EncodingFormat string
	// User is the client's end-user id, if it gave one.
	User string
}

// Count is the number of inputs.
func (e *EmbedRequest) Count() int {
	if e.Tokens != nil {
		return len(e.Tokens)
	}
	return len(e.Inputs)
}
