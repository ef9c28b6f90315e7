//go:build tools

// Package tools records the versitygw command this module builds, so
// `go mod tidy` keeps its dependencies.
package tools

import (
	_ "github.com/versity/versitygw/cmd/versitygw"
)
