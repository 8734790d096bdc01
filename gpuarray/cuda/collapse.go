package cuda

// collapsed returns t with the dims that every leaf's map walks as one merged into one: the
// product of dims k and k+1 replaces them where each leaf's stride on k is its stride on k+1
// times dims[k+1] (a whole contiguous chunk becomes one run), and the freed leading dims are 1
// with stride 0, so the rank stays the spec's. The row-major order of the elements, and so
// every element's index and every leaf's source index, is that of t: a kernel computes the
// same bits, with fewer row changes (each costs a 64-bit division per thread) and runs long
// enough for its unrolled passes (unrolled). For full reductions and elementwise kernels,
// whose iteration order is row-major over all dims.
func collapsed(t Task) Task {
	R := len(t.Dims)
	if R < 2 {
		return t
	}
	for _, d := range t.Dims {
		if d == 0 {
			return t
		}
	}
	L := len(t.Maps)
	// Groups from the innermost dim out: their sizes and each leaf's stride.
	var dims []int64
	var strs [][]int64
	cur := t.Dims[R-1]
	str := make([]int64, L)
	for l := range str {
		str[l] = t.Maps[l].Strides[R-1]
	}
	for k := R - 2; k >= 0; k-- {
		d := t.Dims[k]
		if d == 1 {
			continue
		}
		if cur == 1 {
			cur = d
			for l := range str {
				str[l] = t.Maps[l].Strides[k]
			}
			continue
		}
		merge := true
		for l := range str {
			if t.Maps[l].Strides[k] != str[l]*cur {
				merge = false
				break
			}
		}
		if merge {
			cur *= d
			continue
		}
		dims = append(dims, cur)
		strs = append(strs, str)
		cur = d
		str = make([]int64, L)
		for l := range str {
			str[l] = t.Maps[l].Strides[k]
		}
	}
	dims = append(dims, cur)
	strs = append(strs, str)
	if len(dims) == R {
		return t
	}
	out := t
	out.Dims = make([]int64, R)
	out.Maps = make([]Map, L)
	for l := range L {
		out.Maps[l] = Map{Off: t.Maps[l].Off, Strides: make([]int64, R)}
	}
	for k := range R {
		out.Dims[k] = 1
	}
	// Group g (from the inside) goes to dim R-1-g.
	for g, d := range dims {
		out.Dims[R-1-g] = d
		for l := range L {
			out.Maps[l].Strides[R-1-g] = strs[g][l]
		}
	}
	return out
}
