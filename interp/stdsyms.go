package interp

import (
	"maps"
	"reflect"
	"sync"

	"github.com/traefik/yaegi/interp"
	yaegistd "github.com/traefik/yaegi/stdlib"

	"github.com/gpunotes/gpunotes/interp/stdlib"
)

// stdSymbols is yaegi's standard-library table (Go 1.22) with the names that later Go
// releases added (interp/stdlib, generated from the toolchain that builds the kernel) merged
// in. Neither package's maps are changed: a package present in both gets a new map.
var stdSymbols = sync.OnceValue(func() interp.Exports {
	all := make(interp.Exports, len(yaegistd.Symbols)+len(stdlib.Symbols))
	maps.Copy(all, yaegistd.Symbols)
	for k, add := range stdlib.Symbols {
		have, ok := all[k]
		if !ok {
			all[k] = add
			continue
		}
		merged := make(map[string]reflect.Value, len(have)+len(add))
		maps.Copy(merged, have)
		maps.Copy(merged, add)
		all[k] = merged
	}
	return all
})
