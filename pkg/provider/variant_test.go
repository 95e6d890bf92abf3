package provider

import (
	"testing"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
)

func textBlocks(ss ...string) []exchange.Block {
	out := make([]exchange.Block, len(ss))
	for i, s := range ss {
		out[i] = exchange.Block{Type: exchange.BlockText, Text: s}
	}
	return out
}

func systemTexts(p *exchange.Prompt) []string {
	var out []string
	for _, b := range p.System {
		out = append(out, b.Text)
	}
	return out
}

// A variant edits a copy: the client's prompt is never changed, and each
// edit does what config.Variant documents.
func TestWithVariantOnPrompt(t *testing.T) {
	temp, topP := 0.2, 0.9
	base := func() *exchange.Prompt {
		return &exchange.Prompt{
			System: textBlocks("be brief"),
			Messages: []exchange.Message{
				{Role: exchange.RoleUser, Content: textBlocks("hi")},
				{Role: exchange.RoleSystem, Content: textBlocks("mid")},
			},
			Sampling: exchange.Sampling{MaxTokens: 500},
		}
	}
	if p := base(); WithVariant(p, nil) != p {
		t.Fatal("no variant must return the prompt itself")
	}

	p := base()
	got := WithVariant(p, &config.Variant{System: "replaced", Temperature: &temp, TopP: &topP, MaxTokensCap: 100})
	if s := systemTexts(got); len(s) != 1 || s[0] != "replaced" {
		t.Errorf("System: system %q, want [replaced]", s)
	}
	if len(got.Messages) != 1 || got.Messages[0].Role != exchange.RoleUser {
		t.Errorf("System must drop system messages of the conversation: %+v", got.Messages)
	}
	if *got.Sampling.Temperature != temp || *got.Sampling.TopP != topP || got.Sampling.MaxTokens != 100 {
		t.Errorf("sampling %+v", got.Sampling)
	}
	if s := systemTexts(p); len(s) != 1 || s[0] != "be brief" || len(p.Messages) != 2 || p.Sampling.Temperature != nil || p.Sampling.MaxTokens != 500 {
		t.Errorf("the client's prompt was changed: %+v", p)
	}

	got = WithVariant(base(), &config.Variant{SystemPrefix: "A ", SystemSuffix: " Z", MaxTokensCap: 1000})
	if s := systemTexts(got); len(s) != 3 || s[0] != "A " || s[1] != "be brief" || s[2] != " Z" {
		t.Errorf("prefix/suffix: system %q", s)
	}
	if got.Sampling.MaxTokens != 500 || len(got.Messages) != 2 {
		t.Errorf("a cap above the client's limit must not raise it, and messages stay: %+v", got)
	}

	got = WithVariant(&exchange.Prompt{}, &config.Variant{SystemPrefix: "A", SystemSuffix: "Z"})
	if s := systemTexts(got); len(s) != 1 || s[0] != "AZ" {
		t.Errorf("without a system prompt the edits become one: %q", s)
	}
}
