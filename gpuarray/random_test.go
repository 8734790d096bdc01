package gpuarray

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/internal/testenv"
)

// The distributions are checked against scipy.stats from the test virtualenv: a
// Kolmogorov-Smirnov test for the continuous ones, a chi-square test over the support for the
// counts, and the sample mean and variance against the distribution's.

const distScript = `
import json, sys, numpy as np
from scipy import stats
def dist(d, p):
    return {
        "exponential": lambda: stats.expon(scale=p[0]),
        "gamma": lambda: stats.gamma(p[0], scale=p[1]),
        "chisquare": lambda: stats.chi2(p[0]),
        "beta": lambda: stats.beta(p[0], p[1]),
        "lognormal": lambda: stats.lognorm(s=p[1], scale=np.exp(p[0])),
        "t": lambda: stats.t(p[0]),
        "poisson": lambda: stats.poisson(p[0]),
        "binomial": lambda: stats.binom(int(p[0]), p[1]),
    }[d]()
out = []
for c in json.load(sys.stdin):
    x = np.array(c["Data"], dtype=np.float64)
    D = dist(c["Dist"], c["Params"])
    m, v, k = (float(s) for s in D.stats(moments="mvk"))
    if c["Dist"] in ("poisson", "binomial"):
        a, b = int(D.ppf(1e-9)), int(D.ppf(1 - 1e-9))
        ks = np.arange(a, b + 1)
        pr = D.pmf(ks)
        pr[0] += D.cdf(a - 1)
        pr[-1] += D.sf(b)
        obs = np.bincount((np.clip(x, a, b) - a).astype(np.int64), minlength=len(ks)).astype(np.float64)
        exp = pr * len(x)
        o, e, co, ce = [], [], 0.0, 0.0
        for oi, ei in zip(obs, exp):
            co += oi; ce += ei
            if ce >= 5:
                o.append(co); e.append(ce); co = ce = 0.0
        if ce > 0:
            if e:
                o[-1] += co; e[-1] += ce
            else:
                o.append(co); e.append(ce)
        e = np.array(e) * (sum(o) / sum(e))
        p = float(stats.chisquare(o, e).pvalue) if len(o) > 1 else 1.0
        outside = int(np.sum((x != np.round(x)) | (x < D.support()[0]) | (x > D.support()[1])))
    elif c["Dist"] == "beta" and min(c["Params"]) < 0.1:
        # Tiny a or b put most values within 2^-53 of 0 or 1, where float64 ties them: a
        # chi-square over bins in x below 1/2 and in 1-x (exact there) above, on log scales.
        e = np.array([0, 1e-300, 1e-200, 1e-100, 1e-50, 1e-30, 1e-20, 1e-12, 1e-8, 1e-5, 1e-3, 0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5])
        # 1-x is a multiple of 2^-54 there, so its first bin reaches 1e-12.
        er = e[(e == 0) | (e >= 1e-12)]
        M = stats.beta(c["Params"][1], c["Params"][0])
        lo, hi = x[x <= 0.5], 1 - x[x > 0.5]
        obs = np.concatenate([np.histogram(lo, e)[0], np.histogram(hi, er)[0]]).astype(np.float64)
        pr = np.concatenate([np.diff(D.cdf(e)), np.diff(M.cdf(er))])
        o, ex = [], []
        co = ce = 0.0
        for oi, ei in zip(obs, pr * len(x)):
            co += oi; ce += ei
            if ce >= 5:
                o.append(co); ex.append(ce); co = ce = 0.0
        if ce > 0 and ex:
            o[-1] += co; ex[-1] += ce
        ex = np.array(ex) * (sum(o) / sum(ex))
        p = float(stats.chisquare(o, ex).pvalue) if len(o) > 1 else 1.0
        outside = int(np.sum(~np.isfinite(x) | (x < 0) | (x > 1)))
    else:
        p = float(stats.kstest(x, D.cdf).pvalue)
        outside = int(np.sum(~np.isfinite(x) | (x < D.support()[0]) | (x > D.support()[1])))
    out.append({"P": p, "Mean": m, "Var": v, "Kurt": k, "Outside": outside})
json.dump(out, sys.stdout)
`

type distCase struct {
	Dist   string
	Params []float64
	Data   []float64
}

type distVerdict struct {
	P, Mean, Var, Kurt float64
	Outside            int
}

// scipyCheck runs distScript over the cases.
func scipyCheck(t *testing.T, cases []distCase) []distVerdict {
	t.Helper()
	py := testenv.Python(t)
	outb := runPython(t, py, distScript, cases)
	var out []distVerdict
	// NaN and Inf moments come as bare words, which encoding/json refuses.
	s := strings.NewReplacer("NaN", "null", "-Infinity", "null", "Infinity", "null").Replace(string(outb))
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		t.Fatalf("scipy output: %v\n%s", err, outb)
	}
	if len(out) != len(cases) {
		t.Fatalf("scipy gave %d verdicts for %d cases", len(out), len(cases))
	}
	return out
}

// distDraw is one distribution with parameters, as a draw from a RandomState.
type distDraw struct {
	name   string
	params []float64
	draw   func(r *RandomState, opts ...ArrayOption) *Array
}

func distDraws() []distDraw {
	var ds []distDraw
	add := func(name string, params []float64, f func(r *RandomState, opts ...ArrayOption) *Array) {
		ds = append(ds, distDraw{name, params, f})
	}
	add("exponential", []float64{2.5}, func(r *RandomState, o ...ArrayOption) *Array { return r.Exponential(2.5, o...) })
	for _, g := range [][2]float64{{0.3, 1}, {1, 2}, {4.5, 0.5}, {80, 1}} {
		add("gamma", g[:], func(r *RandomState, o ...ArrayOption) *Array { return r.Gamma(g[0], g[1], o...) })
	}
	for _, df := range []float64{1, 7} {
		add("chisquare", []float64{df}, func(r *RandomState, o ...ArrayOption) *Array { return r.Chisquare(df, o...) })
	}
	// Johnk's method (a, b <= 1, in logarithms when a power underflows) and the gamma ratio.
	for _, ab := range [][2]float64{{0.5, 0.5}, {2, 5}, {0.001, 0.001}, {0.01, 0.01}, {0.01, 5}, {0.2, 0.9}, {1, 1}, {0.05, 1}} {
		add("beta", ab[:], func(r *RandomState, o ...ArrayOption) *Array { return r.Beta(ab[0], ab[1], o...) })
	}
	add("lognormal", []float64{0.3, 0.8}, func(r *RandomState, o ...ArrayOption) *Array { return r.LogNormal(0.3, 0.8, o...) })
	for _, df := range []float64{1.5, 8} {
		add("t", []float64{df}, func(r *RandomState, o ...ArrayOption) *Array { return r.StandardT(df, o...) })
	}
	// Both Poisson methods: inversion below 10, PTRS from 10.
	for _, lam := range []float64{0.7, 6.5, 10, 37, 1e5} {
		add("poisson", []float64{lam}, func(r *RandomState, o ...ArrayOption) *Array { return r.Poisson(lam, o...) })
	}
	// Binomial: inversion (n*p < 10), BTRS, and each with p > 1/2 (drawn as n - X).
	for _, np := range [][2]float64{{15, 0.3}, {40, 0.2}, {50, 0.9}, {200, 0.45}, {1000, 0.97}, {1e6, 0.5}} {
		add("binomial", np[:], func(r *RandomState, o ...ArrayOption) *Array { return r.Binomial(int64(np[0]), np[1], o...) })
	}
	return ds
}

func TestRandomDistributionsScipy(t *testing.T) {
	const n = 20000
	ds := distDraws()
	var cases []distCase
	for i, d := range ds {
		x, err := d.draw(NewRandomState(int64(100+i)), Shape(n), Chunks(7777)).ToSlice()
		if err != nil {
			t.Fatalf("%s%v: %v", d.name, d.params, err)
		}
		cases = append(cases, distCase{d.name, d.params, x})
	}
	vs := scipyCheck(t, cases)
	for i, v := range vs {
		d, x := ds[i], cases[i].Data
		what := fmt.Sprintf("%s%v", d.name, d.params)
		if v.Outside != 0 {
			t.Errorf("%s: %d values outside the support (or not integers)", what, v.Outside)
		}
		// Fixed seeds make this deterministic; 1e-4 leaves room for the 24 cases.
		if v.P < 1e-4 {
			t.Errorf("%s: goodness-of-fit p-value %v", what, v.P)
		}
		mean, vr := moments(x)
		if v.Var > 0 && !math.IsInf(v.Var, 0) {
			if se := math.Sqrt(v.Var / n); math.Abs(mean-v.Mean) > 5*se {
				t.Errorf("%s: mean %v, want %v (se %v)", what, mean, v.Mean, se)
			}
			if k := v.Kurt; !math.IsInf(k, 0) && k != 0 || d.name == "exponential" {
				if se := math.Sqrt((k + 2) * v.Var * v.Var / n); math.Abs(vr-v.Var) > 6*se {
					t.Errorf("%s: variance %v, want %v (se %v)", what, vr, v.Var, se)
				}
			}
		}
		t.Logf("%s: p %.3g, mean %.6g (%.6g), var %.6g (%.6g)", what, v.P, mean, v.Mean, vr, v.Var)
	}
}

func moments(x []float64) (mean, variance float64) {
	for _, v := range x {
		mean += v
	}
	mean /= float64(len(x))
	for _, v := range x {
		variance += (v - mean) * (v - mean)
	}
	return mean, variance / float64(len(x))
}

// TestRandomChunkingIndependent draws each distribution in different chunkings, and as a
// slice, and wants the same values bit for bit.
func TestRandomChunkingIndependent(t *testing.T) {
	for i, d := range distDraws() {
		what := fmt.Sprintf("%s%v", d.name, d.params)
		seed := int64(7 + i)
		ref, err := d.draw(NewRandomState(seed), Shape(23, 17), Chunks(23, 17)).ToSlice()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		for _, c := range [][]int{{5, 5}, {4, 17}, {23, 3}} {
			got, err := d.draw(NewRandomState(seed), Shape(23, 17), Chunks(c...)).ToSlice()
			if err != nil {
				t.Fatalf("%s chunks %v: %v", what, c, err)
			}
			if !slices.Equal(got, ref) {
				t.Errorf("%s: chunks %v give other values", what, c)
			}
		}
		// A slice reads the elements at their own indices.
		sl, err := d.draw(NewRandomState(seed), Shape(23, 17), Chunks(6, 4)).Slice(SpanStep(3, 20, 2), SpanStep(16, 0, -3)).ToSlice()
		if err != nil {
			t.Fatalf("%s slice: %v", what, err)
		}
		k := 0
		for r := 3; r < 20; r += 2 {
			for c := 16; c > 0; c -= 3 {
				if sl[k] != ref[r*17+c] && !(math.IsNaN(sl[k]) && math.IsNaN(ref[r*17+c])) {
					t.Fatalf("%s: slice element (%d, %d) = %v, want %v", what, r, c, sl[k], ref[r*17+c])
				}
				k++
			}
		}
		// Another seed gives other values.
		other, _ := d.draw(NewRandomState(seed+1000), Shape(23, 17)).ToSlice()
		if slices.Equal(other, ref) {
			t.Errorf("%s: seeds %d and %d give the same values", what, seed, seed+1000)
		}
	}
}

func TestRandomDistributionDTypesAndEdges(t *testing.T) {
	r := NewRandomState(5)
	if dt := r.Poisson(3, Shape(4)).DType(); dt != Int64 {
		t.Errorf("Poisson dtype %v, want int64", dt)
	}
	if dt := r.Binomial(3, 0.5, Shape(4)).DType(); dt != Int64 {
		t.Errorf("Binomial dtype %v, want int64", dt)
	}
	if dt := r.Gamma(3, 1, Shape(4), WithDType(Float32)).DType(); dt != Float32 {
		t.Errorf("Gamma float32 dtype %v", dt)
	}
	p, err := r.Poisson(4.5, Shape(1000)).ToSliceInt64()
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range p {
		if v < 0 {
			t.Fatalf("negative Poisson count %d", v)
		}
	}
	// The int64 values are the float64 ones, cast.
	a, _ := NewRandomState(9).Poisson(4.5, Shape(1000)).ToSliceInt64()
	b, _ := NewRandomState(9).Poisson(4.5, Shape(1000), WithDType(Float64)).ToSlice()
	for i := range a {
		if float64(a[i]) != b[i] {
			t.Fatalf("Poisson int64 %d and float64 %v differ at %d", a[i], b[i], i)
		}
	}
	// Degenerate parameters.
	for _, c := range []struct {
		x    *Array
		want float64
	}{
		{r.Binomial(0, 0.3, Shape(5)), 0},
		{r.Binomial(17, 0, Shape(5)), 0},
		{r.Binomial(17, 1, Shape(5)), 17},
		{r.Poisson(0, Shape(5)), 0},
		{r.Gamma(0, 2, Shape(5)), 0},
	} {
		got, err := c.x.ToSlice()
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range got {
			if v != c.want {
				t.Fatalf("degenerate draw %v, want %v", got, c.want)
			}
		}
	}
	for _, c := range []struct {
		x    *Array
		want string
	}{
		{r.Exponential(0, Shape(2)), "Exponential: scale 0"},
		{r.Gamma(-1, 1, Shape(2)), "Gamma: shape -1"},
		{r.Gamma(1, math.NaN(), Shape(2)), "Gamma: scale NaN"},
		{r.Beta(0, 1, Shape(2)), "Beta: a 0"},
		{r.Poisson(-2, Shape(2)), "Poisson: lam -2"},
		{r.Binomial(-1, 0.5, Shape(2)), "Binomial: n -1"},
		{r.Binomial(3, 1.5, Shape(2)), "Binomial: p 1.5"},
		{r.Chisquare(0, Shape(2)), "Chisquare: df 0"},
		{r.StandardT(math.Inf(1), Shape(2)), "StandardT: df +Inf"},
		{r.LogNormal(0, -1, Shape(2)), "LogNormal: mean 0, sigma -1"},
		{r.Gamma(2, 1, Shape(2), WithDType(Int32)), "dtype int32"},
		{r.Choice(Arange(0, 5, 1), 6, false, nil), "6 elements without replacement from 5"},
		{r.Choice(Arange(0, 3, 1), 2, true, []float64{0.5, 0.6, -0.1}), "probability 2 is -0.1"},
		{r.Choice(Arange(0, 3, 1), 2, true, []float64{0.5, 0.6, 0.1}), "sum to 1.2"},
		{r.Choice(Arange(0, 3, 1), 2, false, []float64{1, 0, 0}), "1 non-zero probabilities for 2"},
		{r.Choice(Zeros(Shape(2, 2)), 1, true, nil), "must be 1-d"},
		{r.Permutation(-1), "n -1"},
		{r.Shuffle(Arange(0, 6, 1).Mask(Arange(0, 6, 1).Gt(2))), "Shuffle needs the shape"},
		{r.Choice(Arange(0, 6, 1).Mask(Arange(0, 6, 1).Gt(2)), 2, true, nil), "Choice needs the shape"},
	} {
		err := c.x.Err()
		if err == nil {
			t.Errorf("no error, want %q", c.want)
		} else if !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %q, want %q", err, c.want)
		}
	}
}

func TestPermutationShuffle(t *testing.T) {
	p, err := NewRandomState(3).Permutation(1000).ToSliceInt64()
	if err != nil {
		t.Fatal(err)
	}
	s := slices.Clone(p)
	slices.Sort(s)
	for i, v := range s {
		if v != int64(i) {
			t.Fatalf("Permutation(1000) is not a permutation: sorted[%d] = %d", i, v)
		}
	}
	if slices.IsSorted(p) {
		t.Fatal("Permutation(1000) came out sorted")
	}
	// Uniform over the 24 orders of 4 elements: chi-square over 2400 draws of one state.
	r := NewRandomState(11)
	counts := map[string]float64{}
	const draws = 2400
	for i := 0; i < draws; i++ {
		q, err := r.Permutation(4).ToSliceInt64()
		if err != nil {
			t.Fatal(err)
		}
		counts[fmt.Sprint(q)]++
	}
	if len(counts) != 24 {
		t.Fatalf("%d of 24 orders seen", len(counts))
	}
	chi := 0.0
	for _, c := range counts {
		chi += (c - draws/24) * (c - draws/24) / (draws / 24)
	}
	// 23 degrees of freedom: P(chi2 > 49.7) = 0.001.
	if chi > 49.7 {
		t.Errorf("permutation orders chi-square %v over 23 degrees of freedom", chi)
	}
	// Shuffle moves rows whole, by Permutation's order of the same draw.
	x := Arange(0, 30, 1).Reshape(10, 3)
	sh, err := NewRandomState(4).Shuffle(x).ToSlice()
	if err != nil {
		t.Fatal(err)
	}
	perm, _ := NewRandomState(4).Permutation(10).ToSliceInt64()
	for i, row := range perm {
		for j := 0; j < 3; j++ {
			if sh[i*3+j] != float64(row*3+int64(j)) {
				t.Fatalf("Shuffle row %d = %v, want row %d of x", i, sh[i*3:i*3+3], row)
			}
		}
	}
	// The same permutation in any chunking of the keys' consumers.
	a, _ := NewRandomState(4).Shuffle(x.Rechunk(3, 3)).ToSlice()
	if !slices.Equal(a, sh) {
		t.Error("Shuffle differs with x's chunks")
	}
}

func TestChoice(t *testing.T) {
	a := Arange(10, 14, 1) // 10, 11, 12, 13
	p := []float64{0.1, 0.2, 0.3, 0.4}
	const n = 40000
	// With replacement, uniform and weighted: frequencies against the probabilities.
	for _, w := range [][]float64{nil, p} {
		x, err := NewRandomState(21).Choice(a, n, true, w).ToSlice()
		if err != nil {
			t.Fatal(err)
		}
		want := w
		if want == nil {
			want = []float64{0.25, 0.25, 0.25, 0.25}
		}
		chi := 0.0
		for k, pk := range want {
			c := 0.0
			for _, v := range x {
				if v == float64(10+k) {
					c++
				}
			}
			chi += (c - n*pk) * (c - n*pk) / (n * pk)
		}
		if chi > 16.27 { // 3 degrees of freedom, P = 0.001
			t.Errorf("Choice with replacement, p %v: chi-square %v", w, chi)
		}
	}
	// Without replacement: all of a in a random order, and pairs with numpy's probabilities
	// p_i * p_j / (1 - p_i) for the weighted draw.
	all, err := NewRandomState(2).Choice(a, 4, false, nil).ToSlice()
	if err != nil {
		t.Fatal(err)
	}
	s := slices.Clone(all)
	slices.Sort(s)
	if !slices.Equal(s, []float64{10, 11, 12, 13}) {
		t.Fatalf("Choice of all 4 without replacement: %v", all)
	}
	r := NewRandomState(8)
	const draws = 3000
	pairs := map[[2]int]float64{}
	for i := 0; i < draws; i++ {
		x, err := r.Choice(a, 2, false, p).ToSlice()
		if err != nil {
			t.Fatal(err)
		}
		if x[0] == x[1] {
			t.Fatalf("Choice without replacement repeated %v", x)
		}
		pairs[[2]int{int(x[0]) - 10, int(x[1]) - 10}]++
	}
	chi := 0.0
	for i := range p {
		for j := range p {
			if i == j {
				continue
			}
			e := draws * p[i] * p[j] / (1 - p[i])
			c := pairs[[2]int{i, j}]
			chi += (c - e) * (c - e) / e
		}
	}
	if chi > 31.26 { // 11 degrees of freedom, P = 0.001
		t.Errorf("weighted Choice without replacement: pair chi-square %v (%v)", chi, pairs)
	}
	// Many categories: constant work per draw. Every tenth of 200000 has weight, the first
	// of them half of it all.
	const cats = 200000
	big := make([]float64, cats)
	for i := 10; i < cats; i += 10 {
		big[i] = 0.5 / (cats/10 - 1)
	}
	big[0] = 0.5
	many, err := NewRandomState(12).Choice(Arange(0, cats, 1), n, true, big).ToSlice()
	if err != nil {
		t.Fatal(err)
	}
	first := 0.0
	for _, v := range many {
		if int(v)%10 != 0 {
			t.Fatalf("Choice took %v of probability 0", v)
		}
		if v == 0 {
			first++
		}
	}
	if se := math.Sqrt(n * 0.25); math.Abs(first-n/2) > 5*se {
		t.Errorf("Choice took the half-weight element %v times of %d", first, n)
	}
	// Zero weight is never taken.
	z, err := NewRandomState(3).Choice(a, 1000, true, []float64{0.5, 0, 0.5, 0}).ToSlice()
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range z {
		if v == 11 || v == 13 {
			t.Fatalf("Choice took %v of probability 0", v)
		}
	}
}

// The alias table gives each position its probability: prob[i] of its own column plus what
// the columns aliased to it leave.
func TestAliasTable(t *testing.T) {
	rs := rand.New(rand.NewPCG(4, 4))
	for _, n := range []int{1, 2, 3, 7, 100, 1001} {
		w := make([]float64, n)
		sum := 0.0
		for i := range w {
			if rs.IntN(4) > 0 {
				w[i] = rs.Float64()
			}
			sum += w[i]
		}
		if sum == 0 {
			w[0], sum = 1, 1
		}
		for i := range w {
			w[i] /= sum
		}
		prob, alias := aliasTable(w)
		got := make([]float64, n)
		for i := range prob {
			got[i] += prob[i] / float64(n)
			got[alias[i]] += (1 - prob[i]) / float64(n)
		}
		for i := range w {
			if math.Abs(got[i]-w[i]) > 1e-12 {
				t.Fatalf("n %d: position %d has probability %v, want %v", n, i, got[i], w[i])
			}
			if w[i] == 0 && (prob[i] != 0 || alias[i] == int64(i)) {
				t.Fatalf("n %d: zero weight %d can be taken (prob %v alias %d)", n, i, prob[i], alias[i])
			}
		}
	}
}

// TestBetaNeverNaN draws Beta where the gamma ratio gave NaN (a, b far below 1: both gammas
// underflow) and at the ends of the finite parameters; every value must be in [0, 1], with
// the mean of the distribution.
func TestBetaNeverNaN(t *testing.T) {
	tiny := math.SmallestNonzeroFloat64
	for i, c := range []struct {
		a, b     float64
		n        int
		mean, sd float64 // the distribution's mean and standard deviation
	}{
		{0.001, 0.001, 1_000_000, 0.5, 0.4995},
		{0.01, 0.01, 1_000_000, 0.5, 0.495},
		{tiny, tiny, 20000, 0.5, 0.5},
		{1e-300, 1e-300, 20000, 0.5, 0.5},
		{1e-310, 0.3, 20000, 0, 0},
		{1, 1e-320, 20000, 1, 0},
		{0.5, 1e-5, 20000, 1, 0.0045},
		{1e-5, 3, 20000, 0, 0.0021},
		{1e308, 1e308, 2000, 0.5, 0},
		{math.MaxFloat64, math.MaxFloat64, 2000, 0.5, 0},
		{1e308, 0.5, 2000, 1, 0},
	} {
		x, err := NewRandomState(int64(40+i)).Beta(c.a, c.b, Shape(c.n), Chunks(c.n/3+1)).ToSlice()
		if err != nil {
			t.Fatalf("Beta(%g, %g): %v", c.a, c.b, err)
		}
		bad := 0
		for _, v := range x {
			if !(v >= 0 && v <= 1) {
				bad++
			}
		}
		mean, _ := moments(x)
		tol := 5*c.sd/math.Sqrt(float64(c.n)) + 1e-12
		t.Logf("Beta(%g, %g): %d values, %d outside [0, 1], mean %.6g (%.6g ± %.3g)", c.a, c.b, c.n, bad, mean, c.mean, tol)
		if bad != 0 {
			t.Errorf("Beta(%g, %g): %d of %d values NaN or outside [0, 1]", c.a, c.b, bad, c.n)
		}
		if math.Abs(mean-c.mean) > tol {
			t.Errorf("Beta(%g, %g): mean %v, want %v ± %v", c.a, c.b, mean, c.mean, tol)
		}
	}
}

// TestBetaFloat32Extremes: float32 Beta where the gammas leave float32's range, and the
// smallest parameters, never NaN; an integer dtype is refused on either method.
func TestBetaFloat32Extremes(t *testing.T) {
	for i, c := range []struct{ a, b, mean float64 }{
		{1e39, 1e39, 0.5}, {1e38, 1e38, 0.5}, {3e38, 2, 1}, {1e-46, 1e-46, 0.5}, {2, 1e-40, 1},
	} {
		x := NewRandomState(int64(90+i)).Beta(c.a, c.b, Shape(20000), Chunks(7000), WithDType(Float32))
		if x.DType() != Float32 {
			t.Fatalf("Beta(%g, %g) float32: dtype %v", c.a, c.b, x.DType())
		}
		v, err := x.ToSlice()
		if err != nil {
			t.Fatalf("Beta(%g, %g) float32: %v", c.a, c.b, err)
		}
		bad := 0
		for _, e := range v {
			if !(e >= 0 && e <= 1) {
				bad++
			}
		}
		mean, _ := moments(v)
		if bad != 0 || math.Abs(mean-c.mean) > 0.02 {
			t.Errorf("Beta(%g, %g) float32: %d values NaN or outside [0, 1], mean %v (want %v)", c.a, c.b, bad, mean, c.mean)
		}
	}
	for _, ab := range [][2]float64{{0.5, 0.5}, {2, 3}, {1e39, 1e39}} {
		if err := NewRandomState(1).Beta(ab[0], ab[1], Shape(3), WithDType(Int64)).Err(); err == nil || !strings.Contains(err.Error(), "dtype") {
			t.Errorf("Beta%v int64: error %v, want one about the dtype", ab, err)
		}
	}
}
