package gwstack

import (
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/deployment"
)

// TestFunctionURLCORSFromTheSeedConfig: the Function URL's CORS is the
// seeded config's server.cors, read as the gateway reads it (origins,
// headers, max age), with the contract's methods and exposed headers; one
// setting configures both. Without server.cors there is none
// (TestFunctionURL).
func TestFunctionURLCORSFromTheSeedConfig(t *testing.T) {
	f := get(t, "prod")
	seed, err := os.ReadFile(fixtureContexts["prod"][CtxSeedConfigFile].(string))
	if err != nil {
		t.Fatal(err)
	}
	want, err := config.ParseCORS([]byte(RenderSeedConfig(seed, "prod")))
	if err != nil || !want.Enabled() {
		t.Fatalf("the fixture's seed has no usable server.cors: %+v %v", want, err)
	}
	list := func(s []string) []interface{} {
		out := []interface{}{}
		for _, v := range s {
			out = append(out, v)
		}
		return out
	}
	f.props(t, "AWS::Lambda::Url", map[string]interface{}{
		"Cors": map[string]interface{}{
			"AllowOrigins":  list(want.AllowOrigins),
			"AllowHeaders":  list(want.AllowHeaders),
			"AllowMethods":  list(deployment.CORSMethods()),
			"ExposeHeaders": list(deployment.CORSExposeHeaders()),
			"MaxAge":        want.MaxAge.D().Seconds(),
		},
	})
	if want.MaxAge.D().Seconds() != 300 || len(want.AllowOrigins) != 2 {
		t.Errorf("the fixture's server.cors is not the one the test means: %+v", want)
	}
}

// TestSeedConfigCORSErrorsStopTheDeploy: a bad server.cors in the seed
// config fails the synthesis with the gateway's own positioned error.
func TestSeedConfigCORSErrorsStopTheDeploy(t *testing.T) {
	s := DefaultSettings()
	s.AssetDir = assetDir
	s.SeedConfig = append(readSeed(t), []byte("server:\n  cors: {allow_origins: [\"*\"]}\n")...)
	_, err := New(awscdk.NewApp(nil), s)
	if err == nil || !strings.Contains(err.Error(), "server.cors.allow_origins[0]") || !strings.Contains(err.Error(), "line ") {
		t.Errorf("error %v", err)
	}
}
