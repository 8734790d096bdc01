package notebooks_test

import (
	"strings"
	"testing"
)

func init() {
	checks["09-files"] = func(t *testing.T, cells []cellOutput) {
		text := joined(cells, func(c cellOutput) string { return c.text })
		html := joined(cells, func(c cellOutput) string { return c.html })
		contains(t, "output", text, "npy round trip equal: true", "x3.zarr: ", "x2.zarr: ",
			"attributes: map[seed:7 units:m]", "truncated file: true", "x.npy", "at [1500 0]",
			"FromFile after the .npy header: equal: true", "NPZNames: [means top] <nil>",
			"LoadNPZ: max |saved means - means of the loaded rows| = 0.0e+00 (<nil>)",
			"the array's column chunks: [500 500 500 500] the store's: [2000]",
			"already exists (ZarrOverwrite() replaces it)", "ZarrList: [colmeans top] <nil>",
			"overwritten store holds 2x: true (<nil>)")
		if n := strings.Count(text, "round trip equal: true"); n != 3 {
			t.Errorf("%d round trips (.npy, two Zarr stores) equal, want 3:\n%s", n, text)
		}
		if strings.Contains(text, "round trip equal: false") {
			t.Errorf("a round trip differs:\n%s", text)
		}
		contains(t, "std of standardized columns", text, "std of the standardized columns: 1.000000000000 … 1.000000000000")
		contains(t, "array reprs", html, "(2000, 2000)")
	}
}
