//go:build tools

// Package tools records the etcd commands this module builds, so
// `go mod tidy` keeps their dependencies.
package tools

import (
	_ "go.etcd.io/etcd/etcdctl/v3"
	_ "go.etcd.io/etcd/etcdutl/v3"
)
