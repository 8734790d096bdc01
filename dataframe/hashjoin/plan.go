package hashjoin

// Strategy is how a partitioned join moves its sides before joining them partition by
// partition.
type Strategy int

// The strategies of a partitioned join, as dask's merge picks them.
const (
	// Shuffle hash-partitions both sides on the key into Plan.N partitions.
	Shuffle Strategy = iota
	// BroadcastRight joins every left partition with the whole right side.
	BroadcastRight
	// BroadcastLeft joins every right partition with the whole left side.
	BroadcastLeft
	// Aligned joins partition i of the left with partition i of the right: both are
	// hash-partitioned on the key alike already.
	Aligned
)

// String names the strategy.
func (s Strategy) String() string {
	switch s {
	case Shuffle:
		return "shuffle"
	case BroadcastRight:
		return "broadcast right"
	case BroadcastLeft:
		return "broadcast left"
	case Aligned:
		return "aligned"
	}
	return "unknown"
}

// Side names one side's key columns in a Plan, by index among the side's columns, and their
// validity columns (-1: none). Keys are encoded as for Partition: integer, bool and datetime
// columns as their values, floats as canonical bits (NaN a null), strings and categoricals
// as codes the caller shared between both sides.
type Side struct {
	Keys, Valid []int
}

// Out is one output column of a Plan: column Col of side Side (0 left, 1 right) gathered at
// the joined rows, and its validity column Valid (-1: none). Fill, when not -1, is a column
// of the other side (of the same dtype, validity FillValid) that gives rows the side lacks:
// the coalesced key columns of right and outer joins.
type Out struct {
	Side, Col, Valid int
	Fill, FillValid  int
	Nullable         bool // the output has a validity column
}

// Plan is a partitioned join for an executor that runs it where the data is (a cluster's
// workers): the kind, the strategy, the keys of both sides and the output columns.
type Plan struct {
	How         How
	Strategy    Strategy
	N           int // partitions of a Shuffle
	Left, Right Side
	Out         []Out
}
