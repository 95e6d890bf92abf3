package gwstack

import (
	"fmt"
	"sort"
	"strings"

	yaml "go.yaml.in/yaml/v2"
)

// BedrockModel is a model the seed config calls on a Bedrock provider: a
// foundation model id, an inference profile id (us.anthropic...), or an
// ARN, in the provider's region ("" for the stack region).
type BedrockModel struct {
	Region, ID string
}

// bedrockTarget is one route target of the seed config on a provider of
// kind bedrock: its provider's region, its model and its options.
type bedrockTarget struct {
	Region, Model string
	Options       map[string]string
}

// bedrockTargets reads the Bedrock targets of a rendered seed
// configuration, the one reader behind BedrockModels and MantleRegions.
func bedrockTargets(text string) ([]bedrockTarget, error) {
	var cfg struct {
		Providers map[string]struct {
			Kind   string `yaml:"kind"`
			Region string `yaml:"region"`
		} `yaml:"providers"`
		Routes map[string]struct {
			Targets []struct {
				Provider string            `yaml:"provider"`
				Model    string            `yaml:"model"`
				Options  map[string]string `yaml:"options"`
			} `yaml:"targets"`
		} `yaml:"routes"`
	}
	if err := yaml.Unmarshal([]byte(text), &cfg); err != nil {
		return nil, fmt.Errorf("seed config is not valid YAML: %w", err)
	}
	var out []bedrockTarget
	for _, r := range cfg.Routes {
		for _, t := range r.Targets {
			if p, ok := cfg.Providers[t.Provider]; ok && p.Kind == "bedrock" {
				out = append(out, bedrockTarget{Region: p.Region, Model: strings.TrimSpace(t.Model), Options: t.Options})
			}
		}
	}
	return out, nil
}

// BedrockModels returns the distinct models the routes of a rendered seed
// configuration call on providers of kind bedrock, sorted; the stack
// grants bedrock:InvokeModel on exactly those (see grantBedrock). complete
// is false when a Bedrock target names no model, so the stack cannot know
// what it calls.
func BedrockModels(text string) (models []BedrockModel, complete bool, err error) {
	targets, err := bedrockTargets(text)
	if err != nil {
		return nil, false, err
	}
	seen := map[BedrockModel]bool{}
	complete = true
	for _, t := range targets {
		if t.Model == "" {
			complete = false
			continue
		}
		m := BedrockModel{Region: t.Region, ID: t.Model}
		if !seen[m] {
			seen[m] = true
			models = append(models, m)
		}
	}
	sort.Slice(models, func(i, j int) bool {
		if models[i].ID != models[j].ID {
			return models[i].ID < models[j].ID
		}
		return models[i].Region < models[j].Region
	})
	return models, complete, nil
}

// Guardrail is a Bedrock guardrail the seed config's moderation policies
// apply: its id or ARN and its region ("" for the stack region).
type Guardrail struct {
	Region, ID string
}

// Guardrails returns the distinct guardrails of a rendered seed
// configuration's moderation policies (moderation.policies.*.guardrail),
// sorted; the stack grants bedrock:ApplyGuardrail on exactly those plus
// the guardrailIds context setting.
func Guardrails(text string) ([]Guardrail, error) {
	var cfg struct {
		Moderation struct {
			Policies map[string]struct {
				Guardrail *struct {
					ID     string `yaml:"id"`
					Region string `yaml:"region"`
				} `yaml:"guardrail"`
			} `yaml:"policies"`
		} `yaml:"moderation"`
	}
	if err := yaml.Unmarshal([]byte(text), &cfg); err != nil {
		return nil, fmt.Errorf("seed config is not valid YAML: %w", err)
	}
	seen := map[Guardrail]bool{}
	var out []Guardrail
	for _, p := range cfg.Moderation.Policies {
		if p.Guardrail == nil || strings.TrimSpace(p.Guardrail.ID) == "" {
			continue
		}
		g := Guardrail{Region: p.Guardrail.Region, ID: strings.TrimSpace(p.Guardrail.ID)}
		if !seen[g] {
			seen[g] = true
			out = append(out, g)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID+out[i].Region < out[j].ID+out[j].Region })
	return out, nil
}

// MantleRegions returns the distinct regions ("" for the stack region),
// sorted, of the seed config's Bedrock targets that call OpenAI's models
// on bedrock-mantle (options.openai_endpoint: mantle); the stack grants
// bedrock-mantle:CreateInference there (see grantBedrockMantle). Mantle is
// its own IAM namespace: the bedrock:InvokeModel grant does not cover it.
func MantleRegions(text string) ([]string, error) {
	targets, err := bedrockTargets(text)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []string
	for _, t := range targets {
		if strings.TrimSpace(t.Options["openai_endpoint"]) == "mantle" && !seen[t.Region] {
			seen[t.Region] = true
			out = append(out, t.Region)
		}
	}
	sort.Strings(out)
	return out, nil
}
