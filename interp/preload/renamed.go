package preload

import (
	"strings"

	"github.com/gpunotes/gpunotes/gpuarray"
)

// Renamed maps an old exported name of a preloaded package, as a cell spells it
// ("gpuarray.Fft", or "gpuarray.NanSum" for a method of Array), to its new name
// ("gpuarray.FFT", "gpuarray.NaNSum"), for a compile error's "did you mean". The old names
// still compile for one release (Deprecated); cluster and display renamed nothing.
var Renamed = func() map[string]string {
	m := map[string]string{}
	for old, name := range gpuarray.Renamed {
		// "(*Array).NanSum" is called as x.NanSum: key it by the method name.
		old = strings.TrimPrefix(old, "(*Array).")
		name = strings.TrimPrefix(name, "(*Array).")
		m["gpuarray."+old] = "gpuarray." + name
	}
	return m
}()
