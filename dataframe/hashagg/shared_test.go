package hashagg_test

import (
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/gpunotes/gpunotes/dataframe/hashagg"
)

// TestFoldNewEqualsFold checks that FoldNew's shared counts give the states NewPartial and
// Fold give, bit for bit, for columns with and without nulls, NaNs, empty groups and skipped
// rows.
func TestFoldNewEqualsFold(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 40; trial++ {
		n, ng := r.IntN(2000), 1+r.IntN(300)
		ids := make([]int32, n)
		i32, i64 := make([]int32, n), make([]int64, n)
		f := make([]float64, n)
		valid := make([]bool, n)
		for i := range ids {
			ids[i] = int32(r.IntN(ng))
			if r.IntN(20) == 0 {
				ids[i] = -1
			}
			i32[i], i64[i] = int32(r.IntN(2000)-1000), r.Int64N(1<<40)-1<<39
			f[i] = r.NormFloat64()
			if r.IntN(10) == 0 {
				f[i] = math.NaN()
			}
			valid[i] = r.IntN(8) != 0
		}
		vals := []hashagg.Values{{Int32: i32}, {Int: i64}, {Float: f}, {Int32: i32, Valid: valid}}
		var specs []hashagg.Spec
		for _, op := range []hashagg.Op{hashagg.Sum, hashagg.Count, hashagg.Mean, hashagg.Min, hashagg.Max, hashagg.Var} {
			for c := range vals {
				specs = append(specs, hashagg.Spec{Op: op, Col: c})
			}
		}
		specs = append(specs, hashagg.Spec{Op: hashagg.Size}, hashagg.Spec{Op: hashagg.Median, Col: 0}, hashagg.Spec{Op: hashagg.Size})
		r.Shuffle(len(specs), func(i, j int) { specs[i], specs[j] = specs[j], specs[i] })
		if trial%4 == 0 { // no Size state: FoldNew counts the rows itself
			var noSize []hashagg.Spec
			for _, s := range specs {
				if s.Op != hashagg.Size {
					noSize = append(noSize, s)
				}
			}
			specs = noSize
		}
		if trial%4 == 1 { // db-benchmark q1's states: one Sum fused with the count
			specs = []hashagg.Spec{{Op: hashagg.Sum, Col: trial / 4 % 2}, {Op: hashagg.Size}}
		}
		want, err := hashagg.NewPartial(specs, vals, ng)
		if err != nil {
			t.Fatal(err)
		}
		if err := want.Fold(ids, nil, vals); err != nil {
			t.Fatal(err)
		}
		got, err := hashagg.FoldNew(specs, vals, ng, ids)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			for si := range want.States {
				if !reflect.DeepEqual(got.States[si], want.States[si]) {
					t.Fatalf("trial %d: spec %v: FoldNew %+v, Fold %+v", trial, specs[si], got.States[si], want.States[si])
				}
			}
			t.Fatalf("trial %d: partials differ", trial)
		}
	}
}
