//go:build tools

// Package tools records the promtool command this module builds, so
// `go mod tidy` keeps its dependencies.
package tools

import (
	_ "github.com/prometheus/prometheus/cmd/promtool"
)
