package embedwire

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"strconv"

	"github.com/llmgw/llmgw/pkg/wire/jsonb"
)

// EmbeddingsBody builds an OpenAI embeddings response body for vectors a
// translating adapter received:
//
//	{"object":"list","data":[{"object":"embedding","index":i,"embedding":[...]}, ...],
//	 "model":model,"usage":{"prompt_tokens":n,"total_tokens":n}}
//
// With base64 true each embedding is the base64 of its float32 values,
// little-endian (what OpenAI sends for encoding_format "base64").
func EmbeddingsBody(model string, vectors [][]float64, promptTokens int, base64Encoded bool) []byte {
	b := []byte(`{"object":"list","data":[`)
	for i, v := range vectors {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"object":"embedding","index":`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `,"embedding":`...)
		if base64Encoded {
			raw := make([]byte, 4*len(v))
			for j, f := range v {
				binary.LittleEndian.PutUint32(raw[4*j:], math.Float32bits(float32(f)))
			}
			b = append(b, '"')
			b = base64.StdEncoding.AppendEncode(b, raw)
			b = append(b, '"')
		} else {
			b = append(b, '[')
			for j, f := range v {
				if j > 0 {
					b = append(b, ',')
				}
				b = strconv.AppendFloat(b, f, 'g', -1, 64)
			}
			b = append(b, ']')
		}
		b = append(b, '}')
	}
	b = append(b, `],"model":`...)
	b = jsonb.AppendString(b, model)
	b = append(b, `,"usage":{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(promptTokens), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(promptTokens), 10)
	return append(b, "}}"...)
}
