package cuda

import (
	"context"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx"
)

// TestGPUGroupAggMatchesHashagg runs the group-aggregate kernels on the GPU (shared tables for
// few groups, global atomics for many) and compares their states with dataframe/hashagg's:
// counts, integer sums, minima and maxima bit for bit, float sums within the stated bound.
func TestGPUGroupAggMatchesHashagg(t *testing.T) {
	d := gpu(t)
	ctx := context.Background()
	all := ptx.GroupCount | ptx.GroupSum | ptx.GroupSumSq | ptx.GroupMin | ptx.GroupMax
	for _, groups := range []int{1, 7, 100, 1500, 100000} {
		c := newGroupAggCase(1<<20+17, groups, uint64(groups))
		for _, float := range []bool{false, true} {
			var data *GroupAggData
			var err error
			if float {
				data, err = UploadGroupAggData(ctx, d, c.codes, nil, c.floats)
			} else {
				data, err = UploadGroupAggData(ctx, d, c.codes, c.ints, nil)
			}
			if err != nil {
				t.Fatal(err)
			}
			r, err := data.Aggregate(ctx, groups, all)
			if err != nil {
				t.Fatal(err)
			}
			a := GroupAggKernel(groups, float, all)
			checkGroupAgg(t, a.Name(), r, c.reference(t, groups, float), c, float)
			if err := data.Free(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestGPUGroupAggTimes times db-benchmark q1-like (sum of an int column by 100 groups) and
// q3-like (sum of an int and count and sum of a float column by 1e5 groups) aggregations of
// GPUNOTES_GROUPAGG_ROWS rows (default 1e8) with the data in device memory; it runs only when
// GPUNOTES_GROUPAGG_BENCH=1 and logs the best of five.
func TestGPUGroupAggTimes(t *testing.T) {
	if os.Getenv("GPUNOTES_GROUPAGG_BENCH") != "1" {
		t.Skip("GPUNOTES_GROUPAGG_BENCH=1 runs it")
	}
	d := gpu(t)
	ctx := context.Background()
	n := 100_000_000
	if s := os.Getenv("GPUNOTES_GROUPAGG_ROWS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			t.Fatal(err)
		}
	}
	r := rand.New(rand.NewPCG(42, 1))
	id1, id3 := make([]int64, n), make([]int64, n)
	v1, v3 := make([]int64, n), make([]float64, n)
	for i := range id1 {
		id1[i], id3[i] = r.Int64N(100), r.Int64N(100_000)
		v1[i], v3[i] = 1+r.Int64N(5), r.Float64()*100
	}
	best := func(name string, f func() error) time.Duration {
		b := time.Duration(1 << 62)
		for i := 0; i < 5; i++ {
			t0 := time.Now()
			if err := f(); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			b = min(b, time.Since(t0))
		}
		t.Logf("%s: %d rows, best of 5 %.2f ms", name, n, float64(b.Microseconds())/1e3)
		return b
	}
	t0 := time.Now()
	q1, err := UploadGroupAggData(ctx, d, id1, v1, nil)
	if err != nil {
		t.Fatal(err)
	}
	q3i, err := UploadGroupAggData(ctx, d, id3, v1, nil)
	if err != nil {
		t.Fatal(err)
	}
	q3f, err := UploadGroupAggData(ctx, d, id3, nil, v3)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("upload of 3 code+value pairs: %v", time.Since(t0))
	var sum1 *GroupAggResult
	best("q1 sum v1 by id1 (100 groups)", func() error {
		sum1, err = q1.Aggregate(ctx, 100, ptx.GroupCount|ptx.GroupSum)
		return err
	})
	best("q3 sum v1, mean v3 by id3 (1e5 groups)", func() error {
		if _, err := q3i.Aggregate(ctx, 100_000, ptx.GroupCount|ptx.GroupSum); err != nil {
			return err
		}
		_, err := q3f.Aggregate(ctx, 100_000, ptx.GroupCount|ptx.GroupSum)
		return err
	})
	want := make([]int64, 100)
	for i, k := range id1 {
		want[k] += v1[i]
	}
	for g := range want {
		if sum1.SumI[g] != want[g] {
			t.Fatalf("q1 group %d: sum %d, want %d", g, sum1.SumI[g], want[g])
		}
	}
	for _, x := range []*GroupAggData{q1, q3i, q3f} {
		_ = x.Free(ctx)
	}
}
