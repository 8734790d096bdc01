// Package io is the home of gpuarray's file formats; the code lives in its sub-packages:
//
//	elem    NumPy type strings ('<f8', '|b1', '>i4', '<c16') and conversions of raw elements
//	npy     the .npy header (read, write) and .npz members
//	codec   chunk codecs: gzip, zlib, zstd, blosc (lz4, zstd, zlib inside; byte shuffle)
//	zarr    Zarr v2 and v3 metadata, chunk keys, chunk reads and writes, groups, local stores
//	source  reading a box of a file-backed array (npy, raw, zarr), as a planned task does
//
// The format layer works on raw element bytes described by type strings; only source
// converts them to the values gpuarray computes with.
package io
