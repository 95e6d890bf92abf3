package config

// PacingProfiles are the pacing profiles a route may default to (the
// profiles of pkg/pacing, which tests that the lists agree).
var PacingProfiles = []string{"instant", "fast", "steady", "slow"}

// prepareServing validates the serving stages' settings: pacing defaults,
// the response cache and moderation policies. It runs last (it names
// routes, providers and teams).
func (c *Config) prepareServing() error {
	for _, name := range sortedKeys(c.Routes) {
		r := c.Routes[name]
		if r.Pacing != "" {
			if err := oneOf(pathOf("routes", name, "pacing"), "pacing profile", r.Pacing, PacingProfiles...); err != nil {
				return err
			}
		}
	}
	return nil
}
