//go:build pin

// Package pin keeps the project's chosen ecosystem libraries (and their exact versions) in go.mod while
// the packages that use them are being written in parallel. It is never built.
package pin

import (
	_ "github.com/HdrHistogram/hdrhistogram-go"
	_ "github.com/prometheus/client_model/go"
	_ "github.com/prometheus/common/expfmt"
	_ "k8s.io/api/core/v1"
	_ "k8s.io/apimachinery/pkg/apis/meta/v1"
	_ "sigs.k8s.io/yaml"
)
