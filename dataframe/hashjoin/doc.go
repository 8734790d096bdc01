// Package hashjoin is the hash join engine of dataframe's Merge: it builds an open-addressing
// hash table on the smaller side's keys and probes it with the larger side's, partition by
// partition, and hash-partitions rows for the shuffle that puts equal keys in one partition.
//
// The API is narrow and works on typed key buffers only, so that another implementation (a GPU
// kernel with a device hash table, as cuDF's) can provide the same calls:
//
//	li, ri, err := hashjoin.Join(left, right, hashjoin.Inner) // row pairs of one partition
//	part := hashjoin.Partition(keys, n)                      // a partition in [0, n) per row
//
// Keys. A side's keys are one or more int64 columns of equal length; row i's key is the tuple
// of column values at i. dataframe encodes every key type as int64 codes shared by both sides:
// integers, bools and datetimes as their values, floats as their canonical bits, strings and
// categoricals as codes of one dictionary unified over both sides, and a null as a flag column
// (so nulls match nulls, as pandas' merge matches them).
//
// Results. Join returns index pairs: li[k] and ri[k] are the rows of the k-th output row, -1
// where one side has no match (left, right and outer joins). Inner and left joins come in the
// left rows' order with each row's matches in right order; right joins in the right rows'
// order; outer joins are the left join followed by the unmatched right rows; semi and anti
// joins give left rows only (ri is nil). Which side is built does not change the order.
package hashjoin
