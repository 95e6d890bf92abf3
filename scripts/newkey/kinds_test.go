package main

// Configs name provider kinds, which their adapters' descriptors define:
// linking the provider registry registers them with the config loader.
import _ "github.com/llmgw/llmgw/pkg/provider/registry"
