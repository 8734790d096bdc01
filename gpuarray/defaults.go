package gpuarray

import (
	"fmt"
	"math"
	"reflect"
)

// This file holds the entry points whose NumPy counterparts have defaults: the common call is
// the short one (Eye(3), Histogram(x, 10), Bincount(x), Choice(a, 5)), and the longer forms
// that earlier releases required still compile, since the optional arguments are read in
// NumPy's order from a variadic list.

// number reads a numeric argument of a variadic list (any int, uint or float kind) as
// float64.
func number(v any) (float64, bool) {
	r := reflect.ValueOf(v)
	switch r.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(r.Int()), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return float64(r.Uint()), true
	case reflect.Float32, reflect.Float64:
		return r.Float(), true
	}
	return 0, false
}

// weightsArg reads an optional weights argument: an *Array, or nil (none).
func weightsArg(v any) (*Array, bool) {
	switch v := v.(type) {
	case nil:
		return nil, true
	case *Array:
		return v, true
	}
	return nil, false
}

// Eye returns the n x m array with ones on diagonal k (0 the main one, k > 0 above it, k < 0
// below) and zeros elsewhere, as numpy.eye(n, m=n, k=0): args are, in order and all
// optional, m and k (ints), then ArrayOptions. Eye(3) is the 3 x 3 identity; Eye(3, 4, 1,
// WithDType(Float32)) gives all of them.
func Eye(n int, args ...any) *Array {
	m, k := n, 0
	var opts []ArrayOption
	ints := 0
	for i, v := range args {
		switch v := v.(type) {
		case int:
			if len(opts) > 0 || ints == 2 {
				return errArray(fmt.Errorf("Eye: argument %d (%d): the ints m and k come first, at most two", i+2, v))
			}
			if ints == 0 {
				m = v
			} else {
				k = v
			}
			ints++
		case ArrayOption:
			opts = append(opts, v)
		default:
			return errArray(fmt.Errorf("Eye: argument %d is a %T, want m or k (int) or an ArrayOption", i+2, v))
		}
	}
	return eye(n, m, k, opts...)
}

// Identity returns the n x n identity matrix (numpy.identity; Eye(n)).
func Identity(n int, opts ...ArrayOption) *Array { return eye(n, n, 0, opts...) }

// Histogram returns the histogram of x's values (all of them, flattened) in bins equal bins
// over a range, and the bins' edges, as numpy.histogram(x, bins, range, weights): args are, in
// order and all optional, lo and hi (numbers; default x's minimum and maximum, computed
// first, as NumPy's range=None) and weights (an *Array of x's shape, or nil). The counts are
// int64, or the float64 sums of the weights. Each bin holds lo+i*w <= v < lo+(i+1)*w, the
// last one hi too; values outside [lo, hi] (and NaN) are left out; lo == hi widens the range
// by 0.5 on each side, as NumPy. Bins so narrow that their edges repeat in x's dtype are an
// error, as in NumPy.
func Histogram(x *Array, bins int, args ...any) (hist, edges *Array) {
	lo, hi := math.NaN(), math.NaN()
	var weights *Array
	fail := func(err error) (*Array, *Array) { return errArray(err), errArray(err) }
	switch len(args) {
	case 0:
	case 1, 3:
		w, ok := weightsArg(args[len(args)-1])
		if !ok {
			return fail(fmt.Errorf("Histogram: weights is a %T, want an *Array or nil", args[len(args)-1]))
		}
		weights = w
		if len(args) == 1 {
			break
		}
		fallthrough
	case 2:
		var ok1, ok2 bool
		lo, ok1 = number(args[0])
		hi, ok2 = number(args[1])
		if !ok1 || !ok2 {
			return fail(fmt.Errorf("Histogram: the range is (%T, %T), want two numbers", args[0], args[1]))
		}
	default:
		return fail(fmt.Errorf("Histogram: %d optional arguments, want lo and hi, weights, or all three", len(args)))
	}
	return histogram(x, bins, lo, hi, weights)
}

// Bincount returns the number of occurrences of each value 0, 1, ... of the 1-d array x of
// non-negative integers, as numpy.bincount(x, weights=None, minlength=0): args are, in any
// order and both optional, the weights (an *Array of x's shape, or nil) and minlength (an
// int). Counts are int64, or with weights the float64 sums of the weights of each value. The
// result has length max(minlength, max(x)+1): with minlength 0 the maximum of x is computed
// first (as dask must); with minlength > 0 the result stays lazy with that length, and a
// value of x at or above it is an error when computed.
func Bincount(x *Array, args ...any) *Array {
	var weights *Array
	minlength := 0
	for i, v := range args {
		if n, ok := v.(int); ok {
			minlength = n
			continue
		}
		w, ok := weightsArg(v)
		if !ok {
			return errArray(fmt.Errorf("Bincount: argument %d is a %T, want weights (*Array or nil) or minlength (int)", i+2, v))
		}
		weights = w
	}
	return bincountOf(x, weights, minlength)
}

// Meshgrid2 returns the pair of coordinate arrays of two 1-d arrays (X, Y := Meshgrid2(x, y)),
// as Meshgrid with NumPy's default "xy" indexing: for lengths m and n both have shape (n, m).
func Meshgrid2(x, y *Array) (X, Y *Array) {
	g := Meshgrid(x, y)
	if len(g) != 2 {
		return g[0], g[0] // the error
	}
	return g[0], g[1]
}

// Choice returns size elements drawn from the 1-d array a, as numpy's choice(a, size,
// replace=True, p=None): args are, in any order and both optional, replace (a bool; true:
// each element independently, false: size distinct positions, size <= len(a)) and p (a
// []float64 of len(a) probabilities >= 0 that sum to 1 within 1e-8; nil: all equal).
// Weighted choice with replacement uses Walker's alias table (built here from p: constant
// work per draw for any len(a)); without replacement it takes the size largest keys log(u)/p
// (Efraimidis and Spirakis), which is numpy's sequential rule in distribution.
func (r *RandomState) Choice(a *Array, size int, args ...any) *Array {
	replace := true
	var p []float64
	for i, v := range args {
		switch v := v.(type) {
		case bool:
			replace = v
		case []float64:
			p = v
		case nil:
			p = nil
		default:
			return errArray(fmt.Errorf("Choice: argument %d is a %T, want replace (bool) or p ([]float64)", i+3, v))
		}
	}
	return r.choice(a, size, replace, p)
}

// Arange returns the 1-d array start, start+step, … below stop (above it for a negative
// step), ceil((stop-start)/step) elements as NumPy counts them (none for an empty range), as
// numpy.arange: args are one to three numbers, stop, or start and stop, or start, stop and
// step (default start 0, step 1), then ArrayOptions. Arange(10) is 0, 1, …, 9. The dtype is
// float64 unless WithDType says otherwise (NumPy gives int64 for integer arguments).
func Arange(args ...any) *Array {
	var nums []float64
	var opts []ArrayOption
	for i, v := range args {
		if o, ok := v.(ArrayOption); ok {
			opts = append(opts, o)
			continue
		}
		f, ok := number(v)
		if !ok || len(opts) > 0 {
			return errArray(fmt.Errorf("Arange: argument %d is a %T, want start, stop and step (numbers) first, then ArrayOptions", i+1, v))
		}
		nums = append(nums, f)
	}
	switch len(nums) {
	case 1:
		return arange(0, nums[0], 1, opts...)
	case 2:
		return arange(nums[0], nums[1], 1, opts...)
	case 3:
		return arange(nums[0], nums[1], nums[2], opts...)
	}
	return errArray(fmt.Errorf("Arange: %d numbers given, want stop, start and stop, or start, stop and step", len(nums)))
}

// Diff returns the n-th discrete difference along axis, as numpy.diff(x, n=1, axis=-1): args
// are, in order and both optional, n and axis (negative: from the end). It is x[1:]-x[:-1]
// applied n times, lazily (slices and a subtraction, fused); bools give x[1:] != x[:-1] as
// NumPy's diff. An axis of at most n elements gives an empty axis. (Array API diff)
func Diff(x *Array, args ...int) *Array {
	n, axis := 1, -1
	switch len(args) {
	case 0:
	case 1:
		n = args[0]
	case 2:
		n, axis = args[0], args[1]
	default:
		return errArray(fmt.Errorf("Diff: %d ints given, want n and axis at most", len(args)))
	}
	return diff(x, n, axis)
}

// freqArgs reads the optional sample spacing d (default 1) and ArrayOptions of FFTFreq.
func freqArgs(what string, args []any) (float64, []ArrayOption, error) {
	d := 1.0
	var opts []ArrayOption
	for i, v := range args {
		if o, ok := v.(ArrayOption); ok {
			opts = append(opts, o)
			continue
		}
		f, ok := number(v)
		if !ok || i > 0 {
			return 0, nil, fmt.Errorf("%s: argument %d is a %T, want the spacing d (a number) first, then ArrayOptions", what, i+2, v)
		}
		d = f
	}
	return d, opts, nil
}

// FFTFreq returns the sample frequencies of a transform of length n with sample spacing d
// (numpy.fft.fftfreq(n, d=1.0)): 0, 1, …, n/2-1 (or (n-1)/2), then the negative ones,
// divided by d*n. args are d (optional) and ArrayOptions.
func FFTFreq(n int, args ...any) *Array {
	d, opts, err := freqArgs("FFTFreq", args)
	if err != nil {
		return errArray(err)
	}
	return fftFreq(n, d, opts...)
}

// RFFTFreq returns the sample frequencies of RFFT's terms (numpy.fft.rfftfreq(n, d=1.0)):
// 0, 1, …, n/2, divided by d*n. args are d (optional) and ArrayOptions.
func RFFTFreq(n int, args ...any) *Array {
	d, opts, err := freqArgs("RFFTFreq", args)
	if err != nil {
		return errArray(err)
	}
	return rfftFreq(n, d, opts...)
}
