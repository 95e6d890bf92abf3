package fakellm

import (
	"context"
	"net/http"
	"slices"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/provider"
	"github.com/llmgw/llmgw/pkg/provider/anthropic"
	"github.com/llmgw/llmgw/pkg/provider/openaicompat"
)

// FailureModes are the values of a script's fail.
var FailureModes = []string{"status", "reset", "stall", "after_chunks", "empty"}

// Descriptor is provider kind "fake": a scripted model (Script, the
// provider's fake block) reached through the real openai adapter over an
// in-memory Transport, so it needs no network, no base_url and no model.
// It speaks what the openai kind speaks and, when its apis list messages,
// the Anthropic Messages API too (through the real anthropic adapter), so
// Claude Code's requests pass through to it with every feature kept.
var Descriptor = &provider.Descriptor{
	Config: config.Kind{
		Name:          "fake",
		Speaks:        []string{string(exchange.Chat)},
		APIs:          append(slices.Clone(openaicompat.Descriptor.Config.APIs), string(exchange.Messages)),
		AuthHeader:    "authorization",
		ModelOptional: true,
		Scripted:      true,
		Validate:      validate,
	},
	New: func(_ context.Context, id string, p *config.Provider, _ *http.Client) (provider.Provider, error) {
		hc := &http.Client{Transport: &Transport{Script: p.Fake}}
		fp := *p
		fp.BaseURL = "http://fake.invalid/v1"
		chat, err := openaicompat.New(id, &fp, hc)
		if err != nil || !p.Speaks(string(exchange.Messages)) {
			return chat, err
		}
		fp.BaseURL = "http://fake.invalid"
		msgs, err := anthropic.New(id, &fp, hc)
		if err != nil {
			return nil, err
		}
		return &bilingual{chat: chat, messages: msgs}, nil
	},
}

// bilingual is a fake that speaks Messages as well as Chat Completions:
// Messages requests go to the anthropic adapter (passed through), all
// others to the openai one.
type bilingual struct {
	chat     provider.Provider
	messages *anthropic.Adapter
}

// Send implements provider.Provider.
func (b *bilingual) Send(ctx context.Context, call *provider.Call) (provider.Stream, error) {
	if call.Req.API == exchange.Messages {
		return b.messages.Send(ctx, call)
	}
	return b.chat.Send(ctx, call)
}

// CountTokens implements provider.TokenCounter through the Messages side.
func (b *bilingual) CountTokens(ctx context.Context, call *provider.Call) (int, error) {
	return b.messages.CountTokens(ctx, call)
}

// validate defaults and checks a fake provider's script: an empty one
// when none is given, a known failure mode, and an error status (503 for
// fail: status without one).
func validate(at config.Path, p *config.Provider) error {
	if p.Fake == nil {
		p.Fake = &config.FakeScript{}
	}
	if p.Fake.Fail != "" {
		if err := config.OneOf(at.Key("fake").Key("fail"), "failure mode", p.Fake.Fail, FailureModes...); err != nil {
			return err
		}
	}
	if p.Fake.Fail == "status" && p.Fake.Status == 0 {
		p.Fake.Status = 503
	}
	if p.Fake.Status != 0 && (p.Fake.Status < 400 || p.Fake.Status > 599) {
		return config.ErrAt(at.Key("fake").Key("status"), "%d is not an HTTP error status (400-599)", p.Fake.Status)
	}
	return nil
}

func init() { config.RegisterKind(&Descriptor.Config) }
