package notebooks_test

import (
	"strings"
	"testing"
)

func init() {
	checks["15-dataframes"] = func(t *testing.T, cells []cellOutput) {
		text := joined(cells, func(c cellOutput) string { return c.text })
		html := joined(cells, func(c cellOutput) string { return c.html })
		contains(t, "output", text,
			"wrote 20000 rows in 4 Parquet files",
			"[seq id1 id4 v1 v3 when] 4 partitions",
			"with seq >= N-100 pushed down: 1 row group kept, 100 rows pass",
			// id4 = i%11 of 20000 rows: 1818 rows of id4 3, in each of the 4 partitions' files.
			"hive columns [seq id1 v1 v3 when id4] - 4 files of id4=3, 1818 rows",
			// 20000 rows, v1 = i%5 summed by id4 = i%11 (checked against a loop).
			"sum of v1 by id4: [3636 3640 3639 3637 3635 3633 3636 3639 3637 3635 3633]",
			"groupby: hash aggregation on the host (dataframe/hashagg) over 4 partitions",
			// v3 = (i%1000)/10 (null where i%13 == 0), id4 = i%11, i < 20000: 99.9 at i = 9999
			// only in id4 0, then 99.8 at 8998; 99.9 at 8999 and 19999 in id4 1. v1 = i%5: 0 in each.
			"two largest v3 of id4 0 and 1: [99.9 99.8 99.9 99.9] smallest v1 per id4: [0 0 0 0 0 0 0 0 0 0 0]",
			"r² of v1 and 2·v1+1 in 11 groups: 1.000000",
			"cluster groupby equal to the local one: true",
			// Persist places partition i of every column on the i-th worker by name, whatever
			// their load: 4 partitions on 2 workers.
			"persisted: true held on 2 cluster workers",
			"groupby of the persisted frame on the workers equal to the local one: true",
			"groupby: partial aggregates of 4 partitions on the workers holding them",
			"[A B A C] [true false false true]",
			"shape 4 2", "len 4",
			"from codes category [hi lo  hi] [true true false true]",
			"[100] [25] [10] [40] [4] [12.909944487358056] [166.66666666666666] [4] [25]",
			"tail [30 40]",
			"sum of y through its array: 140",
			"MapPartitions: [0 2 8 18 32 50 72 98] <nil> true")
		if gpuPresent() {
			contains(t, "output", text, "GPU groupby equal to the CPU's: true", "GPU path: ", "through pinned buffers")
		} else {
			contains(t, "output", text, "GPU groupby skipped: ")
		}
		contains(t, "HTML", html, `<table class="dataframe"`, "<th>statistic</th>", "<i>float64</i>", "11 rows × 7 columns, 1 partitions, held on host", "held on")
		if strings.Contains(text, "equal to the local one: false") {
			t.Errorf("cluster result differs:\n%s", text)
		}
	}
}
