// Package quietjsii silences the jsii runtime's Node.js version banners for
// tests. Import it for its side effect (import _ ".../quietjsii").
//
// The jsii kernel (a node child process) is started by the init functions of
// the CDK packages, before TestMain runs, so os.Setenv in TestMain is too
// late. This package has no dependencies besides os and its import path
// sorts before golang.org/x/..., which the CDK packages depend on, so Go's
// package initialization order (ready packages in import-path order) runs
// this init first.
package quietjsii

import "os"

func init() {
	setDefault("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")
	// Past a release's end-of-life date jsii prints another banner, silenced
	// per major version.
	setDefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "18,20,22")
}

func setDefault(key, value string) {
	if _, ok := os.LookupEnv(key); !ok {
		os.Setenv(key, value)
	}
}
