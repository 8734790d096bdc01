// Package preload holds the generated yaegi symbol tables of the packages every cell gets
// without an import (display, gpuarray, cluster, dataframe), and the list of their import paths.
//
// Regenerate after changing their exported API: go generate ./interp/preload
package preload

import "reflect"

// Symbols are the export tables, keyed by "importpath/name" as yaegi expects.
var Symbols = map[string]map[string]reflect.Value{}

// Packages are the import paths that cells import implicitly.
var Packages = []string{
	"github.com/gpunotes/gpunotes/display",
	"github.com/gpunotes/gpunotes/display/widget",
	"github.com/gpunotes/gpunotes/cluster",
	"github.com/gpunotes/gpunotes/gpuarray",
	"github.com/gpunotes/gpunotes/cluster/slurm",
	"github.com/gpunotes/gpunotes/dataframe",
}

//go:generate go run github.com/traefik/yaegi/cmd/yaegi@v0.16.1 extract github.com/gpunotes/gpunotes/display
//go:generate go run github.com/traefik/yaegi/cmd/yaegi@v0.16.1 extract github.com/gpunotes/gpunotes/display/widget
//go:generate go run github.com/traefik/yaegi/cmd/yaegi@v0.16.1 extract github.com/gpunotes/gpunotes/cluster
//go:generate go run github.com/traefik/yaegi/cmd/yaegi@v0.16.1 extract github.com/gpunotes/gpunotes/gpuarray
//go:generate go run github.com/traefik/yaegi/cmd/yaegi@v0.16.1 extract github.com/gpunotes/gpunotes/cluster/slurm
//go:generate go run github.com/traefik/yaegi/cmd/yaegi@v0.16.1 extract github.com/gpunotes/gpunotes/dataframe

// Third-party packages that cells import (not preloaded): compiled in, so they run at compiled
// speed and need neither network nor toolchain. yaegi cannot interpret gonum's source (assembly,
// unsafe), so fetching it with the go command would not make it importable.
//go:generate go run github.com/traefik/yaegi/cmd/yaegi@v0.16.1 extract gonum.org/v1/gonum/mat gonum.org/v1/gonum/stat github.com/google/uuid
//
// gonum.org/v1/plot likewise: its PNG shown with display.PNG (plot's own writers through
// p.WriterTo(w, h, "png")).
//go:generate go run github.com/traefik/yaegi/cmd/yaegi@v0.16.1 extract gonum.org/v1/plot gonum.org/v1/plot/plotter gonum.org/v1/plot/vg gonum.org/v1/plot/vg/draw gonum.org/v1/plot/plotutil gonum.org/v1/plot/vg/vgimg gonum.org/v1/plot/font
