// Package devsort runs the sorts of planned library calls (expr.FnSort, FnSortDesc,
// FnArgsort, FnArgsortDesc) on a GPU: the stable LSD radix sort of kernels/sort.cu, launched
// through the driver on a gpuarray/cuda Device. Its results are bit-equal to package
// gpuarray/cpu's sort (NumPy's stable sort: NaN last ascending and first descending, equal
// values, -0 and +0 among them, in their original order; argsorts give the same indices).
//
// A program that imports it (package gpuarray does) has cuda.RunPlan sort on the GPU; values a
// fused kernel computes stay on the device between that kernel and the sort.
package devsort
