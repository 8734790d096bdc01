package apicov

// NDArrayListCommand prints NumPy's ndarray methods and attributes, one a line, as
// ndarray_methods.txt holds them (written by it with the test venv's NumPy 2.4.6);
// TestNDArrayMethods runs it again when GPUNOTES_PYTHON names a Python with NumPy.
const NDArrayListCommand = `import numpy as np; print('\n'.join(sorted(n for n in dir(np.ndarray) if not n.startswith('_'))))`

// NDArrayRow is one public method or attribute of NumPy's ndarray and the *Array method it
// is here ("" when a lazy array cannot have it, with the reason in Note).
type NDArrayRow struct {
	NumPy string
	Go    string // the method of *Array
	Note  string
}

// Reasons a lazy array leaves an ndarray method out.
const (
	inPlace = "changes the array in place; an Array is an immutable expression"
	buffer  = "exposes one memory buffer; a lazy chunked array has none until computed"
	pickle  = "Python's pickle"
)

// NDArrayRows lists NumPy's ndarray methods and attributes (ndarray_methods.txt) in order.
var NDArrayRows = []NDArrayRow{
	{"T", "T", ""},
	{"all", "All", ""},
	{"any", "Any", ""},
	{"argmax", "ArgMax", ""},
	{"argmin", "ArgMin", ""},
	{"argpartition", "Argpartition", "a full argsort, one arrangement argpartition allows"},
	{"argsort", "Argsort", ""},
	{"astype", "AsType", ""},
	{"base", "", buffer},
	{"byteswap", "", "swaps the bytes of the buffer (in place or a copy); AsType converts values"},
	{"choose", "Choose", ""},
	{"clip", "Clip", ""},
	{"compress", "Compress", ""},
	{"conj", "Conj", ""},
	{"conjugate", "Conjugate", ""},
	{"copy", "Copy", ""},
	{"ctypes", "", buffer},
	{"cumprod", "Cumprod", ""},
	{"cumsum", "Cumsum", ""},
	{"data", "", buffer},
	{"device", "Where", "the device holding a computed array's chunks"},
	{"diagonal", "Diagonal", "of the last two axes (NumPy: the first two)"},
	{"dot", "Dot", ""},
	{"dtype", "DType", ""},
	{"dump", "", pickle},
	{"dumps", "", pickle},
	{"fill", "", inPlace},
	{"flags", "", buffer},
	{"flat", "", buffer + " (Ravel gives the values)"},
	{"flatten", "Flatten", ""},
	{"getfield", "", buffer},
	{"imag", "Imag", ""},
	{"item", "Item", ""},
	{"itemsize", "ItemSize", ""},
	{"mT", "MT", ""},
	{"max", "Max", ""},
	{"mean", "Mean", ""},
	{"min", "Min", ""},
	{"nbytes", "NBytes", ""},
	{"ndim", "NDim", ""},
	{"nonzero", "Nonzero", ""},
	{"partition", "Partition", "a full sort, one arrangement partition allows"},
	{"prod", "Prod", ""},
	{"put", "", inPlace},
	{"ravel", "Ravel", ""},
	{"real", "Real", ""},
	{"repeat", "Repeat", ""},
	{"reshape", "Reshape", ""},
	{"resize", "", inPlace},
	{"round", "Round", "to integers (decimals: Mul, Round, Div, as NumPy computes it)"},
	{"searchsorted", "Searchsorted", ""},
	{"setfield", "", inPlace},
	{"setflags", "", inPlace},
	{"shape", "Shape", ""},
	{"size", "Size", ""},
	{"sort", "Sort", ""},
	{"squeeze", "Squeeze", ""},
	{"std", "Std", ""},
	{"strides", "", buffer},
	{"sum", "Sum", ""},
	{"swapaxes", "Swapaxes", ""},
	{"take", "Take", ""},
	{"to_device", "Persist", "Persist(OnGPU(i)) keeps the computed chunks on GPU i"},
	{"tobytes", "ToBytes", ""},
	{"tofile", "ToFile", ""},
	{"tolist", "ToList", ""},
	{"trace", "Trace", ""},
	{"transpose", "Transpose", ""},
	{"var", "Var", ""},
	{"view", "", buffer},
}
