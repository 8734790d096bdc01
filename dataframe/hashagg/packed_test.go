package hashagg

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSumCountPackedEqualsPlain checks sumCountPacked (where packable allows it) against a
// plain sum and count, with values at the int32 extremes, negative sums, counts already
// present, and skipped rows; and that packable refuses sums that could pass 32 bits.
func TestSumCountPackedEqualsPlain(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		rows, groups int
		lo, hi       int64
		packs        bool
	}{
		{1, 1, math.MaxInt32, math.MaxInt32, true},
		{1, 1, math.MinInt32, math.MinInt32, false},
		{3, 1, -(1 << 29), -(1 << 29), true},
		{5000, 7, -1000, 1000, true},
		{5000, 300, 1, 15, true},
		{1 << 12, 3, 1 << 19, 1 << 19, false}, // 2^12 * 2^19 = 2^31
	} {
		ids := make([]int32, c.rows)
		x := make([]int32, c.rows)
		for i := range ids {
			ids[i] = int32(r.IntN(c.groups))
			if i > 0 && r.IntN(10) == 0 {
				ids[i] = -1
			}
			x[i] = int32(c.lo + r.Int64N(c.hi-c.lo+1))
		}
		cnt := make([]int64, c.groups)
		for g := range cnt {
			cnt[g] = int64(r.IntN(50))
		}
		if got := packable(cnt, len(ids), x); got != c.packs {
			t.Fatalf("%+v: packable %v", c, got)
		}
		sum := make([]int64, c.groups)
		wantSum, wantCnt := make([]int64, c.groups), append([]int64(nil), cnt...)
		for j, g := range ids {
			if g >= 0 {
				wantSum[g] += int64(x[j])
				wantCnt[g]++
			}
		}
		if c.packs {
			sumCountPacked(sum, cnt, ids, x)
		} else {
			sumCount(sum, cnt, ids, x)
		}
		for g := range sum {
			if sum[g] != wantSum[g] || cnt[g] != wantCnt[g] {
				t.Fatalf("%+v: group %d: sum %d count %d, want %d and %d", c, g, sum[g], cnt[g], wantSum[g], wantCnt[g])
			}
		}
	}
}
