package dataframe

// layout is what a frame knows of its rows' placement: the column SetIndex made its index
// (the frame is sorted on it, partition p holding keys in [divisions[p], divisions[p+1]]),
// and the key columns Shuffle hash-partitioned it on (with dataframe/hashjoin's Partition).
type layout struct {
	index     string
	divisions []any // the first index value of every partition, then the last value
	hashedOn  []string
}
