package bedrock

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"

	"github.com/tidwall/gjson"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/wire/bedrockwire"
	"github.com/llmgw/llmgw/pkg/wire/jsonb"
)

// The parts of a Converse request a content block or an option holds:
// images, documents, tool results, inference settings, tools,
// additionalModelRequestFields (see prompt.go for the whole mapping).

func image(p string, ib *bedrockwire.ImageBlock) (exchange.Block, error) {
	if !bedrockwire.ImageFormats[ib.Format] {
		return exchange.Block{}, bad(p+".format", "%s.format: must be png, jpeg, gif or webp", p)
	}
	b := exchange.Block{Type: exchange.BlockImage, MediaType: "image/" + ib.Format}
	switch s := ib.Source; {
	case s != nil && len(s.Bytes) > 0:
		b.Data = s.Bytes
	case s != nil && s.S3Location != nil && s.S3Location.URI != "":
		b.URL = s.S3Location.URI
	default:
		return exchange.Block{}, bad(p+".source", "%s.source: must set bytes or s3Location", p)
	}
	return b, nil
}

func document(p string, db *bedrockwire.DocumentBlock) (exchange.Block, error) {
	if db.Name == "" {
		return exchange.Block{}, bad(p+".name", "%s.name: required", p)
	}
	b := exchange.Block{Type: exchange.BlockDocument, Title: db.Name, Context: db.Context, AskCitations: db.Citations != nil && db.Citations.Enabled}
	mt, ok := bedrockwire.DocumentMediaTypes[db.Format]
	s := db.Source
	switch {
	case s != nil && s.Text != nil:
		b.MediaType, b.Data = "text/plain", []byte(*s.Text)
		return b, nil
	case !ok:
		return exchange.Block{}, bad(p+".format", "%s.format: must be one of pdf, csv, doc, docx, xls, xlsx, html, txt, md", p)
	case s != nil && len(s.Bytes) > 0:
		b.MediaType, b.Data = mt, s.Bytes
	case s != nil && s.S3Location != nil && s.S3Location.URI != "":
		b.MediaType, b.URL = mt, s.S3Location.URI
	default:
		return exchange.Block{}, bad(p+".source", "%s.source: must set bytes, text or s3Location", p)
	}
	return b, nil
}

func (c *promptConv) toolResult(p string, tr *bedrockwire.ToolResultBlock) (exchange.Block, error) {
	if tr.ToolUseID == "" {
		return exchange.Block{}, bad(p+".toolUseId", "%s.toolUseId: required", p)
	}
	switch tr.Status {
	case "", "success", "error":
	default:
		return exchange.Block{}, bad(p+".status", "%s.status: must be success or error", p)
	}
	b := exchange.Block{Type: exchange.BlockToolResult, ToolID: tr.ToolUseID, IsError: tr.Status == "error"}
	for k, rc := range tr.Content {
		q := fmt.Sprintf("%s.content[%d]", p, k)
		switch {
		case rc.Text != nil:
			b.Content = append(b.Content, exchange.Block{Type: exchange.BlockText, Text: *rc.Text})
		case len(rc.JSON) > 0:
			b.Content = append(b.Content, exchange.Block{Type: exchange.BlockText, Text: string(bytes.TrimSpace(rc.JSON))})
		case rc.Image != nil:
			ib, err := image(q+".image", rc.Image)
			if err != nil {
				return exchange.Block{}, err
			}
			b.Content = append(b.Content, ib)
		case rc.Document != nil:
			db, err := document(q+".document", rc.Document)
			if err != nil {
				return exchange.Block{}, err
			}
			b.Content = append(b.Content, db)
		case len(rc.Video) > 0:
			c.lose(q+".video", "a video in a tool result")
		case len(rc.SearchResult) > 0:
			c.lose(q+".searchResult", "a search result in a tool result")
		default:
			return exchange.Block{}, bad(q, "%s: must set exactly one of json, text, image, document, video, searchResult", q)
		}
	}
	return b, nil
}

func (c *promptConv) inference(ic *bedrockwire.InferenceConfig) error {
	if ic == nil {
		return nil
	}
	s := &c.p.Sampling
	if ic.MaxTokens != nil {
		if *ic.MaxTokens < 1 {
			return bad("inferenceConfig.maxTokens", "inferenceConfig.maxTokens: must be at least 1, got %d", *ic.MaxTokens)
		}
		s.MaxTokens = *ic.MaxTokens
	}
	for _, f := range []struct {
		name string
		v    *float64
	}{{"temperature", ic.Temperature}, {"topP", ic.TopP}} {
		if f.v != nil && (math.IsNaN(*f.v) || *f.v < 0 || *f.v > 1) {
			return bad("inferenceConfig."+f.name, "inferenceConfig.%s: must be between 0 and 1", f.name)
		}
	}
	s.Temperature, s.TopP = ic.Temperature, ic.TopP
	for i, seq := range ic.StopSequences {
		if seq == "" {
			return bad(fmt.Sprintf("inferenceConfig.stopSequences[%d]", i), "inferenceConfig.stopSequences[%d]: must not be empty", i)
		}
	}
	s.Stop = ic.StopSequences
	return nil
}

func (c *promptConv) tools(tc *bedrockwire.ToolConfig) error {
	if tc == nil {
		return nil
	}
	for i, t := range tc.Tools {
		p := fmt.Sprintf("toolConfig.tools[%d]", i)
		switch {
		case t.ToolSpec != nil:
			ts := t.ToolSpec
			if ts.Name == "" {
				return bad(p+".toolSpec.name", "%s.toolSpec.name: required", p)
			}
			schema := bytes.TrimSpace(ts.InputSchema.JSON)
			if len(schema) == 0 || schema[0] != '{' {
				return bad(p+".toolSpec.inputSchema", "%s.toolSpec.inputSchema.json: must be a JSON schema object", p)
			}
			c.p.Tools = append(c.p.Tools, exchange.Tool{Kind: exchange.ToolFunction, Name: ts.Name, Description: ts.Description,
				Schema: schema, Strict: ts.Strict})
		case t.CachePoint != nil:
			bp, err := cache(p+".cachePoint", t.CachePoint)
			if err != nil {
				return err
			}
			if len(c.p.Tools) == 0 {
				return bad(p+".cachePoint", "%s.cachePoint: must follow a tool", p)
			}
			c.p.Tools[len(c.p.Tools)-1].Cache = bp
		case len(t.SystemTool) > 0:
			c.lose(p+".systemTool", "a Bedrock system tool")
		default:
			return bad(p, "%s: must set exactly one of toolSpec, systemTool, cachePoint", p)
		}
	}
	if ch := tc.ToolChoice; ch != nil {
		switch {
		case ch.Auto != nil:
			c.p.ToolChoice.Mode = exchange.ToolAuto
		case ch.Any != nil:
			c.p.ToolChoice.Mode = exchange.ToolAny
		case ch.Tool != nil && ch.Tool.Name != "":
			c.p.ToolChoice = exchange.ToolChoice{Mode: exchange.ToolNamed, Name: ch.Tool.Name}
		default:
			return bad("toolConfig.toolChoice", "toolConfig.toolChoice: must set exactly one of auto, any, tool (with a name)")
		}
	}
	return nil
}

// additional reads additionalModelRequestFields: Anthropic's thinking and
// top_k, as Bedrock passes them to Claude; any other member is kept as
// untranslated.
func (c *promptConv) additional(raw json.RawMessage) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if raw[0] != '{' {
		return bad("additionalModelRequestFields", "additionalModelRequestFields: must be a JSON object")
	}
	var err error
	jsonb.Members(string(raw), func(k, v string) bool {
		p := "additionalModelRequestFields." + k
		switch k {
		case "top_k":
			r := gjson.Parse(v)
			if r.Type != gjson.Number || r.Int() < 0 || float64(r.Int()) != r.Num {
				err = bad(p, "%s: must be a non-negative integer", p)
				return false
			}
			n := int(r.Int())
			c.p.Sampling.TopK = &n
		case "thinking":
			err = c.thinking(p, gjson.Parse(v))
			return err == nil
		default:
			c.lose(p, "the model request field "+k)
		}
		return true
	})
	return err
}

func (c *promptConv) thinking(p string, t gjson.Result) error {
	if !t.IsObject() {
		return bad(p, "%s: must be an object", p)
	}
	r := &c.p.Output.Reasoning
	switch mode := t.Get("type").String(); mode {
	case "enabled":
		n := t.Get("budget_tokens")
		if n.Type != gjson.Number || n.Int() < 1 {
			return bad(p+".budget_tokens", "%s.budget_tokens: required, a positive integer", p)
		}
		r.Mode, r.BudgetTokens = mode, int(n.Int())
	case "adaptive", "disabled":
		r.Mode = mode
	default:
		return bad(p+".type", "%s.type: must be enabled, adaptive or disabled", p)
	}
	t.ForEach(func(k, _ gjson.Result) bool {
		if k.Str != "type" && k.Str != "budget_tokens" {
			c.lose(p+"."+k.Str, "thinking."+k.Str)
		}
		return true
	})
	return nil
}
