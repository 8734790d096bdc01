package interp

import (
	"cmp"
	_ "embed" // the generic standard library sources below
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/traefik/yaegi/interp"
)

// yaegi's extract skips generic functions, and the generic sources yaegi compiles into every
// interpreter lack slices' sorting, searching and iterator functions and maps' iterators.
// These sources add them to the same packages, as interpreted generics.
var (
	//go:embed gostd/slices.go.txt
	slicesSrc string
	//go:embed gostd/maps.go.txt
	mapsSrc string
	//go:embed gostd/iter.go.txt
	iterSrc string
)

func loadGenericStd(i *interp.Interpreter) error {
	for name, src := range map[string]string{"slices": slicesSrc, "maps": mapsSrc, "iter": iterSrc} {
		if _, err := i.Compile(src); err != nil {
			return fmt.Errorf("generic %s: %w", name, err)
		}
	}
	return nil
}

// compareValues is cmp.Compare on ordered values of any kind (for the generic slices source):
// NaN sorts before every other float, as cmp.Compare has it.
func compareValues(a, b any) int {
	x, y := reflect.ValueOf(a), reflect.ValueOf(b)
	switch {
	case x.CanInt() && y.CanInt():
		return cmp3(x.Int() < y.Int(), x.Int() > y.Int())
	case x.CanUint() && y.CanUint():
		return cmp3(x.Uint() < y.Uint(), x.Uint() > y.Uint())
	case x.CanFloat() && y.CanFloat():
		p, q := x.Float(), y.Float()
		pn, qn := p != p, q != q
		if pn || qn {
			return cmp3(pn && !qn, qn && !pn)
		}
		return cmp3(p < q, p > q)
	case x.Kind() == reflect.String && y.Kind() == reflect.String:
		return strings.Compare(x.String(), y.String())
	}
	panic(fmt.Sprintf("compare %T with %T: not ordered types", a, b))
}

// sortValues is slices.Sort for a slice that interpreted code hands over as any: compiled
// instantiations for the common element types, reflection (still compiled) for the others.
func sortValues(x any) {
	switch v := x.(type) {
	case []int:
		slices.Sort(v)
	case []int64:
		slices.Sort(v)
	case []int32:
		slices.Sort(v)
	case []uint8:
		slices.Sort(v)
	case []uint64:
		slices.Sort(v)
	case []float64:
		slices.SortFunc(v, cmp.Compare[float64])
	case []float32:
		slices.SortFunc(v, cmp.Compare[float32])
	case []string:
		slices.Sort(v)
	default:
		rv := reflect.ValueOf(x)
		if rv.Kind() != reflect.Slice {
			panic(fmt.Sprintf("slices.Sort: %T is not a slice", x))
		}
		swap := reflect.Swapper(x)
		sort.Sort(valueSorter{rv, swap})
	}
}

type valueSorter struct {
	v    reflect.Value
	swap func(i, j int)
}

func (s valueSorter) Len() int      { return s.v.Len() }
func (s valueSorter) Swap(i, j int) { s.swap(i, j) }
func (s valueSorter) Less(i, j int) bool {
	return compareValues(s.v.Index(i).Interface(), s.v.Index(j).Interface()) < 0
}

func cmp3(less, more bool) int {
	switch {
	case less:
		return -1
	case more:
		return 1
	}
	return 0
}
