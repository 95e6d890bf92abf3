package moderation

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/aws/smithy-go"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/provider"
)

// GuardrailAPI is the part of the Bedrock Runtime client the guardrail
// layer calls; *bedrockruntime.Client satisfies it.
type GuardrailAPI interface {
	ApplyGuardrail(ctx context.Context, in *bedrockruntime.ApplyGuardrailInput, optFns ...func(*bedrockruntime.Options)) (*bedrockruntime.ApplyGuardrailOutput, error)
}

var _ GuardrailAPI = (*bedrockruntime.Client)(nil)

// layerGuardrail names the guardrail layer in logs.
const layerGuardrail = "guardrail"

var errGuardrailTimeout = errors.New("guardrail timeout")

// guardrail is layer three: ApplyGuardrail on the text (source INPUT or
// OUTPUT). GUARDRAIL_INTERVENED blocks - whatever the policy's action was
// (BLOCKED, or ANONYMIZED: the gateway does not rewrite text, so a masked
// answer is refused rather than sent unmasked); NONE allows. The call is
// one attempt in the request's trace, target
// "bedrock-guardrail/<id>:<version>", with the text units it was billed
// for and their price (config moderation.guardrail_prices).
func (m *Moderator) guardrail(ctx context.Context, env envConfig, req *exchange.Request, g *config.ModerationGuardrail, text, stageName string) (verdict, error) {
	start := m.now()
	a := exchange.Attempt{Target: "bedrock-guardrail/" + g.ID + ":" + g.Version, Stage: stageName}
	defer func() { attempt(&req.Trace, a, start, m.now()) }()
	api, err := m.guardrailAPI(ctx, g)
	if err != nil {
		a.Category = gwerr.Internal
		return verdict{}, &layerError{"no Bedrock client: " + safeReason(err)}
	}
	source := types.GuardrailContentSourceInput
	if stageName == exchange.StageModerationOutput {
		source = types.GuardrailContentSourceOutput
	}
	cctx, cancel := context.WithTimeoutCause(ctx, g.Timeout.D(), errGuardrailTimeout)
	defer cancel()
	out, err := api.ApplyGuardrail(cctx, &bedrockruntime.ApplyGuardrailInput{
		GuardrailIdentifier: aws.String(g.ID), GuardrailVersion: aws.String(g.Version), Source: source,
		Content: []types.GuardrailContentBlock{&types.GuardrailContentBlockMemberText{Value: types.GuardrailTextBlock{Text: aws.String(text)}}},
	})
	if err != nil {
		a.Category = gwerr.Unavailable
		var re interface{ HTTPStatusCode() int }
		if errors.As(err, &re) {
			a.Status = re.HTTPStatusCode()
		}
		switch {
		case ctx.Err() != nil:
			return verdict{}, &layerError{"request ended"}
		case errors.Is(context.Cause(cctx), errGuardrailTimeout):
			a.Category = gwerr.Timeout
			return verdict{}, &layerError{"timeout after " + g.Timeout.D().String()}
		}
		return verdict{}, &layerError{"ApplyGuardrail failed: " + safeReason(err)}
	}
	a.Status = http.StatusOK
	a.TextUnits, a.CostUSD = guardrailCost(out.Usage, env.Config.Moderation.GuardrailPrices.Prices())
	switch out.Action {
	case types.GuardrailActionGuardrailIntervened:
		return verdict{block: true, category: interventionReason(out.Assessments)}, nil
	case types.GuardrailActionNone:
		return verdict{}, nil
	}
	a.Category = gwerr.Unavailable
	return verdict{}, &layerError{"malformed response (action " + fmt.Sprintf("%.32q", string(out.Action)) + ")"}
}

// envConfig is the part of the stage's environment the guardrail reads.
type envConfig struct{ Config *config.Config }

// safeReason names an SDK error without its message (which may quote the
// request): the API error code, or the kind of failure.
func safeReason(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return fmt.Sprintf("%.64s", ae.ErrorCode())
	}
	var oe *smithy.OperationError
	if errors.As(err, &oe) {
		return "transport error"
	}
	return "error"
}

// guardrailCost is a call's billed text units (every policy's) and their
// price in USD; the free units of regex filters cost nothing.
func guardrailCost(u *types.GuardrailUsage, p config.GuardrailUnitPrices) (int, float64) {
	if u == nil {
		return 0, 0
	}
	n := func(v *int32) int {
		if v == nil || *v < 0 {
			return 0
		}
		return int(*v)
	}
	units := []struct {
		n     int
		price float64
	}{
		{n(u.ContentPolicyUnits), p.Content}, {n(u.TopicPolicyUnits), p.Topic}, {n(u.WordPolicyUnits), p.Word},
		{n(u.SensitiveInformationPolicyUnits), p.SensitiveInformation},
		{n(u.ContextualGroundingPolicyUnits), p.ContextualGrounding}, {n(u.AutomatedReasoningPolicyUnits), p.AutomatedReasoning},
	}
	total, cost := 0, 0.0
	for _, x := range units {
		total += x.n
		cost += float64(x.n) * x.price / 1000
	}
	return total, cost
}

// interventionReason names what intervened, from the assessments: the
// policy and the filter type, topic name or entity type of each finding
// that acted (sorted, distinct, at most 200 bytes) - never a matched word
// or entity value, which are the text itself.
func interventionReason(as []types.GuardrailAssessment) string {
	seen := map[string]bool{}
	add := func(acted bool, s string) {
		if acted && s != "" {
			seen[fmt.Sprintf("%.64s", s)] = true
		}
	}
	for _, a := range as {
		if p := a.ContentPolicy; p != nil {
			for _, f := range p.Filters {
				add(f.Action != types.GuardrailContentPolicyActionNone, "content:"+string(f.Type))
			}
		}
		if p := a.TopicPolicy; p != nil {
			for _, t := range p.Topics {
				add(t.Action != types.GuardrailTopicPolicyActionNone, "topic:"+aws.ToString(t.Name))
			}
		}
		if p := a.WordPolicy; p != nil {
			for _, w := range p.CustomWords {
				add(w.Action != types.GuardrailWordPolicyActionNone, "word:custom")
			}
			for _, w := range p.ManagedWordLists {
				add(w.Action != types.GuardrailWordPolicyActionNone, "word:"+string(w.Type))
			}
		}
		if p := a.SensitiveInformationPolicy; p != nil {
			for _, e := range p.PiiEntities {
				add(e.Action != types.GuardrailSensitiveInformationPolicyActionNone, "sensitive_information:"+string(e.Type))
			}
			for _, r := range p.Regexes {
				add(r.Action != types.GuardrailSensitiveInformationPolicyActionNone, "sensitive_information:regex:"+aws.ToString(r.Name))
			}
		}
		if p := a.ContextualGroundingPolicy; p != nil {
			for _, f := range p.Filters {
				add(f.Action != types.GuardrailContextualGroundingPolicyActionNone, "contextual_grounding:"+string(f.Type))
			}
		}
		if a.AutomatedReasoningPolicy != nil {
			add(true, "automated_reasoning")
		}
	}
	if len(seen) == 0 {
		return "guardrail"
	}
	names := make([]string, 0, len(seen))
	for s := range seen {
		names = append(names, s)
	}
	sort.Strings(names)
	out := strings.Join(names, ",")
	if len(out) > 200 {
		out = out[:200]
	}
	return out
}

// guardrailAPI returns the client of g: the Guardrails hook's, else one
// SDK client per region and endpoint, kept for the Moderator's life.
func (m *Moderator) guardrailAPI(ctx context.Context, g *config.ModerationGuardrail) (GuardrailAPI, error) {
	if m.Guardrails != nil {
		return m.Guardrails(ctx, g)
	}
	key := g.Region + " " + g.Endpoint
	if c, ok := m.clients.Load(key); ok {
		return c.(GuardrailAPI), nil
	}
	m.clientMu.Lock()
	defer m.clientMu.Unlock()
	if c, ok := m.clients.Load(key); ok {
		return c.(GuardrailAPI), nil
	}
	c, err := NewGuardrailClient(ctx, g)
	if err != nil {
		return nil, err
	}
	m.clients.Store(key, c)
	return c, nil
}

// NewGuardrailClient builds the SDK client a guardrail is called with: the
// default AWS config (credential chain, AWS_REGION,
// AWS_ENDPOINT_URL_BEDROCK_RUNTIME) with the guardrail's region and
// endpoint, no SDK retries (the layer's timeout bounds one call; its mode
// decides what an error means), and no redirect followed.
func NewGuardrailClient(ctx context.Context, g *config.ModerationGuardrail) (*bedrockruntime.Client, error) {
	var opts []func(*awsconfig.LoadOptions) error
	if g.Region != "" {
		opts = append(opts, awsconfig.WithRegion(g.Region))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, err
	}
	if cfg.Region == "" {
		return nil, errors.New("no region: set the guardrail's region, or AWS_REGION")
	}
	return bedrockruntime.NewFromConfig(cfg, func(o *bedrockruntime.Options) {
		if g.Endpoint != "" {
			o.BaseEndpoint = aws.String(g.Endpoint)
		}
		// The loaded client's transport (AWS_CA_BUNDLE applied), in a
		// client that follows no redirect: neither the signed request nor
		// the text reaches another host.
		if bc, ok := o.HTTPClient.(*awshttp.BuildableClient); ok {
			o.HTTPClient = &http.Client{Transport: bc.GetTransport(), CheckRedirect: provider.NoRedirects}
		} else {
			o.HTTPClient = &http.Client{CheckRedirect: provider.NoRedirects}
		}
		o.Retryer = aws.NopRetryer{}
	}), nil
}

// clientCache is embedded in Moderator: the SDK clients built so far.
type clientCache struct {
	clients  sync.Map // region+" "+endpoint -> GuardrailAPI
	clientMu sync.Mutex
}
