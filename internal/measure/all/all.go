// Package all is the explicit list of kubeslow's measurements: adding one is one package plus one line here.
package all

import (
	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/nodes"
)

// Registry returns every measurement, in the order reports list them.
func Registry() *measure.Registry {
	return measure.NewRegistry(
		nodes.New(),
	)
}
