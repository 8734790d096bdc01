package gpuarray

// anyOpts appends ArrayOptions to the leading arguments of a variadic entry point that takes
// them among other arguments (Eye).
func anyOpts(lead []any, opts []ArrayOption) []any {
	for _, o := range opts {
		lead = append(lead, o)
	}
	return lead
}
