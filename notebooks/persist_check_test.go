package notebooks_test

import (
	"strings"
	"testing"
)

func init() {
	checks["10-persist"] = func(t *testing.T, cells []cellOutput) {
		text := joined(cells, func(c cellOutput) string { return c.text })
		html := joined(cells, func(c cellOutput) string { return c.html })
		contains(t, "output", text,
			"persisted on the host in ",
			"pass 3: column 0 ", "equal to the lazy array's: true",
			"persisted on 2 cluster workers",
			"equal to the local result: true",
			"describe on a worker gave a Stats: count 8 mean 3.875 max 9",
			"submitted: ", "future finished: 1200 row standard deviations",
			"48 chunk tasks in one pass",
			"released; cluster closed, err = <nil>")
		if strings.Contains(text, "equal to the lazy array's: false") {
			t.Errorf("a pass on the persisted array differs from the lazy one:\n%s", text)
		}
		if gpuPresent() {
			contains(t, "output", text, "persisted on gpu 0: mean ")
		} else {
			contains(t, "output", text, "GPU persist skipped: ")
		}
		contains(t, "HTML", html, "Held on cpu0", "Held on cpu1", "<b>ArrayFuture</b>", "finished")
	}
}
