// Package hashagg is the hash aggregation engine of dataframe's GroupBy: it groups the rows of
// one partition by their keys in an open-addressing hash table, folds value columns into
// per-group partial states, combines partial states of several partitions (dataframe combines
// them as a tree, in a fixed order), splits them by key hash for SplitOut, and finalizes them
// into result columns.
//
// The API is narrow and works on typed column buffers only, so that another implementation
// (a GPU kernel with a device hash table) can provide the same four steps:
//
//	g, err := hashagg.Group(keys)                 // keys: []Key, every key type as int64 codes
//	p, err := hashagg.Aggregate(g, specs, values) // one Partial per partition
//	p, err  = hashagg.Combine(p1, p2, ...)        // merge partials (re-groups on their keys)
//	parts  := p.Split(n)                          // n partials by key hash (SplitOut)
//	res    := p.Finalize()                        // one Result column per Spec
//
// Keys. Every key column is int64 codes with an optional validity: integers, bools and
// datetimes as their values, categoricals as their dictionary codes, strings as the codes of a
// dictionary shared by all partitions (dataframe builds it). Rows with a null key are dropped
// (pandas' dropna=True): their group ID is -1. Groups are numbered in order of first
// appearance; Groups.Keys holds each group's key.
//
// Values. A Values column is integer (Int: ints, bools, datetimes, codes) or floating (Float),
// with an optional validity (nulls, and NaN for floats, are skipped as pandas skips them), and
// optional global row positions (Pos) that First and Last use to pick the first and last row
// across partitions.
//
// States. Sum (int64 for integer input, exact), Count, Size, Min, Max, Mean, Var and Std
// (count, mean and M2, merged by Chan's formula), First and Last (value and row position) are
// algebraic: a partial holds one state per group. NUnique, Median and Quantile are holistic:
// a partial holds the (group, value) pairs, and Finalize sorts them per group, as cuDF falls
// back to sorting for them. Var and Std use ddof=1 (pandas' default); Quantile interpolates
// linearly.
//
// A GPU implementation would keep the same contract: Key and Values as device buffers, a
// Partial whose states are device columns, and the same Combine and Finalize semantics, so that
// dataframe's tree combine and SplitOut need no change.
package hashagg
