// Package apicov holds gpuarray's coverage of the Python Array API standard (2023.12): one row
// per function of the standard, the gpuarray name it has here (the rule: `name_with_parts`
// becomes `NameWithParts`, a package function or an Array method), and where it runs. `go
// generate` writes the README's coverage section from it; its test fails when a gpuarray name
// in the table is not in gpuarray's exported API or the README is stale.
//
// The function names are the `__all__` lists of the standard's stub modules
// (data-apis/array-api, src/array_api_stubs/_2023_12, read at commit 8884c406).
package apicov

//go:generate go run ./gen

// Where a function runs on a GPU backend.
const (
	Fused  = "fused kernel"
	Kernel = "GPU kernel"              // a generated reduction kernel
	CuFFT  = "cuFFT"                   // a library call on the device
	Solver = "cuSOLVER"                // a library call on the device, matrix by matrix
	CuBLAS = "cuBLAS"                  // a library call on the device, row panel by row panel
	Radix  = "GPU radix sort"          // kernels/sort.cu on the device (package cuda/devsort)
	Scan   = "GPU scan kernel"         // a generated scan along the axis (cuda/scan.go)
	Host   = "host (Path says so)"     // the task runs on the CPU, declared in Path and warned
	Eager  = "cuBLAS/cuSOLVER (eager)" // computed when called, on the device
	Create = "host data, then fused"   // values made on the host, read by fused kernels
	Gather = "gathered on the GPU"     // the operand's values gathered by a device kernel, then fused
	// The mask's selected positions are listed on the host (its length must be known, as
	// dask's compute_chunk_sizes); the rest runs on the device.
	MaskGather   = "fused mask; positions listed on the host, gathered on the GPU"
	SortMask     = "GPU radix sort; mask positions listed on the host, gathered on the GPU"
	SortScanMask = "GPU radix sort and scan; mask positions listed on the host, gathered on the GPU"
	None         = "" // not in gpunotes yet
)

// Row is one function of the standard.
type Row struct {
	Group   string // the standard's module
	API     string // its name in the standard
	Go      string // gpuarray's name: "FFT" (a function) or "(*Array).Sum" (a method); "" when missing
	GPU     string // where it runs with OnGPU
	Cluster bool   // whether its tasks run on cluster workers (lazy stages do; eager calls run in the notebook)
	Note    string
}

// elementwise rows whose GPU body exists (the rest of the op table runs on the host there).
func ew(api, goName, gpu string) Row {
	return Row{Group: "elementwise", API: api, Go: goName, GPU: gpu, Cluster: true}
}

func lazy(group, api, goName, gpu string) Row {
	return Row{Group: group, API: api, Go: goName, GPU: gpu, Cluster: true}
}

func missing(group, api, note string) Row { return Row{Group: group, API: api, Note: note} }

// Rows is the standard's function list, in its modules' order.
var Rows = []Row{
	lazy("creation", "arange", "Arange", Fused),
	lazy("creation", "asarray", "FromSlice", Create),
	lazy("creation", "empty", "Empty", Fused),
	lazy("creation", "empty_like", "EmptyLike", Fused),
	lazy("creation", "eye", "Eye", Fused),
	missing("creation", "from_dlpack", "no DLPack exchange yet"),
	lazy("creation", "full", "Full", Fused),
	lazy("creation", "full_like", "FullLike", Fused),
	lazy("creation", "linspace", "Linspace", Fused),
	lazy("creation", "meshgrid", "Meshgrid", Fused),
	lazy("creation", "ones", "Ones", Fused),
	lazy("creation", "ones_like", "OnesLike", Fused),
	lazy("creation", "tril", "Tril", Fused),
	lazy("creation", "triu", "Triu", Fused),
	lazy("creation", "zeros", "Zeros", Fused),
	lazy("creation", "zeros_like", "ZerosLike", Fused),

	lazy("data types", "astype", "(*Array).AsType", Fused),
	missing("data types", "can_cast", "gpuarray/dtype has the rules, not exported to cells"),
	missing("data types", "finfo", ""),
	missing("data types", "iinfo", ""),
	missing("data types", "isdtype", ""),
	missing("data types", "result_type", "gpuarray/dtype.Promote, not exported to cells"),

	ew("abs", "(*Array).Abs", Fused),
	ew("acos", "Acos", Fused),
	ew("acosh", "Acosh", Fused),
	ew("add", "(*Array).Add", Fused),
	ew("asin", "Asin", Fused),
	ew("asinh", "Asinh", Fused),
	ew("atan", "Atan", Fused),
	ew("atan2", "Atan2", Fused),
	ew("atanh", "Atanh", Fused),
	ew("bitwise_and", "BitwiseAnd", Fused),
	ew("bitwise_left_shift", "BitwiseLeftShift", Fused),
	ew("bitwise_invert", "BitwiseInvert", Fused),
	ew("bitwise_or", "BitwiseOr", Fused),
	ew("bitwise_right_shift", "BitwiseRightShift", Fused),
	ew("bitwise_xor", "BitwiseXor", Fused),
	ew("ceil", "Ceil", Fused),
	ew("clip", "Clip", Fused),
	ew("conj", "Conj", Fused),
	ew("copysign", "Copysign", Fused),
	ew("cos", "(*Array).Cos", Fused),
	ew("cosh", "Cosh", Fused),
	ew("divide", "(*Array).Div", Fused),
	ew("equal", "(*Array).Eq", Fused),
	ew("exp", "(*Array).Exp", Fused),
	ew("expm1", "Expm1", Fused),
	ew("floor", "Floor", Fused),
	ew("floor_divide", "FloorDivide", Fused),
	ew("greater", "(*Array).Gt", Fused),
	ew("greater_equal", "(*Array).Ge", Fused),
	ew("hypot", "Hypot", Fused),
	ew("imag", "Imag", Fused),
	ew("isfinite", "IsFinite", Fused),
	ew("isinf", "IsInf", Fused),
	ew("isnan", "IsNaN", Fused),
	ew("less", "(*Array).Lt", Fused),
	ew("less_equal", "(*Array).Le", Fused),
	ew("log", "(*Array).Log", Fused),
	ew("log1p", "Log1p", Fused),
	ew("log2", "Log2", Fused),
	ew("log10", "Log10", Fused),
	ew("logaddexp", "Logaddexp", Fused),
	ew("logical_and", "LogicalAnd", Fused),
	ew("logical_not", "LogicalNot", Fused),
	ew("logical_or", "LogicalOr", Fused),
	ew("logical_xor", "LogicalXor", Fused),
	ew("maximum", "(*Array).Maximum", Fused),
	ew("minimum", "(*Array).Minimum", Fused),
	ew("multiply", "(*Array).Mul", Fused),
	ew("negative", "(*Array).Neg", Fused),
	ew("not_equal", "(*Array).Ne", Fused),
	missing("elementwise", "positive", "the identity: use the array itself"),
	ew("pow", "(*Array).Pow", Fused),
	ew("real", "Real", Fused),
	ew("remainder", "Remainder", Fused),
	ew("round", "Round", Fused),
	ew("sign", "Sign", Fused),
	ew("signbit", "Signbit", Fused),
	ew("sin", "(*Array).Sin", Fused),
	ew("sinh", "Sinh", Fused),
	ew("square", "Square", Fused),
	ew("sqrt", "(*Array).Sqrt", Fused),
	ew("subtract", "(*Array).Sub", Fused),
	ew("tan", "Tan", Fused),
	ew("tanh", "(*Array).Tanh", Fused),
	ew("trunc", "Trunc", Fused),

	lazy("indexing", "take", "Take", Gather),

	lazy("manipulation", "broadcast_arrays", "BroadcastArrays", Fused),
	lazy("manipulation", "broadcast_to", "BroadcastTo", Fused),
	lazy("manipulation", "concat", "Concat", Fused),
	lazy("manipulation", "expand_dims", "ExpandDims", Fused),
	lazy("manipulation", "flip", "Flip", Fused),
	lazy("manipulation", "moveaxis", "MoveAxis", Fused),
	lazy("manipulation", "permute_dims", "PermuteDims", Fused),
	lazy("manipulation", "repeat", "Repeat", Fused),
	lazy("manipulation", "reshape", "Reshape", Fused),
	lazy("manipulation", "roll", "Roll", Fused),
	lazy("manipulation", "squeeze", "Squeeze", Fused),
	lazy("manipulation", "stack", "Stack", Fused),
	lazy("manipulation", "tile", "Tile", Fused),
	lazy("manipulation", "unstack", "Unstack", Fused),

	lazy("searching", "argmax", "(*Array).ArgMax", Kernel),
	lazy("searching", "argmin", "(*Array).ArgMin", Kernel),
	lazy("searching", "nonzero", "Nonzero", MaskGather),
	{Group: "searching", API: "searchsorted", Go: "Searchsorted", GPU: Fused, Cluster: true, Note: "a binary search per value, fused with the values searched for; the sorted array read whole, in place where a GPU holds it"},
	lazy("searching", "where", "Where", Fused),

	lazy("set", "unique_all", "UniqueAll", SortScanMask),
	lazy("set", "unique_counts", "UniqueCounts", SortMask),
	lazy("set", "unique_inverse", "UniqueInverse", SortScanMask),
	lazy("set", "unique_values", "UniqueValues", SortMask),

	lazy("sorting", "argsort", "Argsort", Radix),
	lazy("sorting", "sort", "Sort", Radix),

	lazy("statistical", "cumulative_sum", "CumulativeSum", Scan),
	lazy("statistical", "max", "(*Array).Max", Kernel),
	lazy("statistical", "mean", "(*Array).Mean", Kernel),
	lazy("statistical", "min", "(*Array).Min", Kernel),
	lazy("statistical", "prod", "(*Array).Prod", Scan),
	lazy("statistical", "std", "(*Array).Std", Kernel),
	lazy("statistical", "sum", "(*Array).Sum", Kernel),
	lazy("statistical", "var", "(*Array).Var", Kernel),

	lazy("utility", "all", "(*Array).All", Kernel),
	lazy("utility", "any", "(*Array).Any", Kernel),

	{Group: "linear algebra", API: "matmul", Go: "MatMul", GPU: CuBLAS, Cluster: true, Note: "lazy; tasks of a row chunk of a by a column chunk of b"},
	missing("linear algebra", "matrix_transpose", "(*Array).T reverses all axes; PermuteDims swaps the last two"),
	lazy("linear algebra", "tensordot", "Tensordot", Kernel),
	lazy("linear algebra", "vecdot", "Vecdot", Kernel),

	lazy("linalg", "cholesky", "Cholesky", Solver),
	lazy("linalg", "cross", "Cross", Fused),
	lazy("linalg", "det", "Det", Solver),
	lazy("linalg", "diagonal", "Diagonal", Fused),
	lazy("linalg", "eigh", "Eigh", Solver),
	lazy("linalg", "eigvalsh", "Eigvalsh", Solver),
	lazy("linalg", "inv", "Inv", Solver),
	{Group: "linalg", API: "matmul", Go: "MatMul", GPU: CuBLAS, Cluster: true, Note: "lazy; tasks of a row chunk of a by a column chunk of b"},
	lazy("linalg", "matrix_norm", "MatrixNorm", Kernel),
	missing("linalg", "matrix_power", ""),
	lazy("linalg", "matrix_rank", "MatrixRank", Solver),
	missing("linalg", "matrix_transpose", "(*Array).T reverses all axes; PermuteDims swaps the last two"),
	lazy("linalg", "outer", "Outer", Fused),
	lazy("linalg", "pinv", "Pinv", Solver),
	{Group: "linalg", API: "qr", Go: "QR", GPU: Eager, Note: "TSQR, computed when called"},
	lazy("linalg", "slogdet", "Slogdet", Solver),
	lazy("linalg", "solve", "Solve", Solver),
	{Group: "linalg", API: "svd", Go: "SVD", GPU: Eager, Note: "TSQR, computed when called"},
	missing("linalg", "svdvals", "SVD(x).S"),
	lazy("linalg", "tensordot", "Tensordot", Kernel),
	lazy("linalg", "trace", "Trace", Kernel),
	lazy("linalg", "vecdot", "Vecdot", Kernel),
	lazy("linalg", "vector_norm", "VectorNorm", Kernel),

	lazy("fft", "fft", "FFT", CuFFT),
	lazy("fft", "ifft", "IFFT", CuFFT),
	lazy("fft", "fftn", "FFTN", CuFFT),
	lazy("fft", "ifftn", "IFFTN", CuFFT),
	lazy("fft", "rfft", "RFFT", CuFFT),
	lazy("fft", "irfft", "IRFFT", CuFFT),
	lazy("fft", "rfftn", "RFFTN", CuFFT),
	lazy("fft", "irfftn", "IRFFTN", CuFFT),
	lazy("fft", "hfft", "HFFT", CuFFT),
	lazy("fft", "ihfft", "IHFFT", CuFFT),
	lazy("fft", "fftfreq", "FFTFreq", Create),
	lazy("fft", "rfftfreq", "RFFTFreq", Create),
	lazy("fft", "fftshift", "FFTShift", Fused),
	lazy("fft", "ifftshift", "IFFTShift", Fused),
}
