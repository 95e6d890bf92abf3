package config_test

// The config's tests parse configs naming the built-in provider kinds,
// which their adapters' descriptors define: linking the provider registry
// registers them (config.RegisterKind).
import _ "github.com/llmgw/llmgw/pkg/provider/registry"
