package modelid

import "testing"

func TestBase(t *testing.T) {
	const claude = "anthropic.claude-sonnet-4-5-20250929-v1:0"
	for id, want := range map[string]string{
		claude:                     claude,
		"us." + claude:             claude,
		"eu." + claude:             claude,
		"apac." + claude:           claude,
		"global." + claude:         claude,
		"us-gov." + claude:         claude,
		"jp.amazon.nova-lite-v1:0": "amazon.nova-lite-v1:0",
		"arn:aws:bedrock:us-east-1::foundation-model/" + claude:                                claude,
		"arn:aws:bedrock:us-east-1:123456789012:inference-profile/us." + claude:                claude,
		"arn:aws-us-gov:bedrock:us-gov-west-1:123456789012:inference-profile/us-gov." + claude: claude,
		"arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3d4e5f6":    "",
		"arn:aws:bedrock:us-east-1:123456789012:provisioned-model/abc123":                      "",
		"arn:aws:s3:::bucket/key":         "",
		"us":                              "us",
		"us.gpt":                          "us.gpt", // no provider.model after the prefix: not a profile
		"meta.llama3-3-70b-instruct-v1:0": "meta.llama3-3-70b-instruct-v1:0",
	} {
		if got := Base(id); got != want {
			t.Errorf("Base(%q) = %q, want %q", id, got, want)
		}
	}
}

func TestIsProfile(t *testing.T) {
	for id, want := range map[string]bool{
		"us.anthropic.claude-3-7-sonnet-20250219-v1:0":                           true,
		"anthropic.claude-3-7-sonnet-20250219-v1:0":                              false,
		"arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/x": true,
		"arn:aws:bedrock:us-east-1::foundation-model/amazon.nova-pro-v1:0":       false,
	} {
		if IsProfile(id) != want {
			t.Errorf("IsProfile(%q) = %v", id, !want)
		}
	}
}
