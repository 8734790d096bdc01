package notebooks_test

import "testing"

// The merge, sort and set_index cells at the end of 15-dataframes (checked after the frame
// cells' own check, which init in dataframes_check_test.go registers first).
func init() {
	prev := checks["15-dataframes"]
	checks["15-dataframes"] = func(t *testing.T, cells []cellOutput) {
		if prev != nil {
			prev(t, cells)
		}
		text := joined(cells, func(c cellOutput) string { return c.text })
		contains(t, "output", text,
			"inner: [cust amount city] 4 rows",
			"left: [Oslo Rome Oslo Lima ] [true true true true false]",
			"both sides hash-partitioned on the key into 2 partitions",
			"outer: [cust amount_o amount_c name] 6 rows",
			"semi: [10 20 30 40]", "anti: [50]",
			// pandas: sort_values(["team", "pts"], ascending=[True, False], na_position="first")
			"sorted: [a a a b b c] [9 5 1 3 3 0] 3 partitions",
			"nlargest: [9 5] nsmallest: [1 3]",
			"drop duplicates, first: [3 5 0] last: [3 0 9]",
			"index k divisions [0 250 500 750 999]",
			"loc 100..104: [100 101 102 103 104] from 1 partition",
			"join on the index: [k v sq] [10000 10201 10404 0 0] [true true true false false]",
			"merge of shuffled frames: 1000 rows;", "(3 partitions), no shuffle",
			"repartitioned into 8",
			// The same frames on three workers: 1000 left rows, keys 0..999 against 0, 3, ..., 1197.
			"cluster left merge: 1000 rows, 334 matched, equal to the local one: true",
			"hash join on the cluster's workers", "into 4 partitions, moved worker to worker",
			"inner, small right side: 334 rows;", "right side (400 rows) broadcast to 4 left partitions",
			"cluster sort, first: [999 998 997 996 995]", "sorted on the cluster's workers",
			"cluster set_index: 4 partitions, divisions from 0 to 999",
			// 334 matched w values, all distinct, and one null.
			"distinct w of the merge on the workers: 335")
	}
}
