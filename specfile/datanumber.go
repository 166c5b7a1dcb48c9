package specfile

import (
	"errors"
	"math"
	"regexp"
	"strconv"
)

// Numbers in the data files a spec names (a reference's survey weights and counts) are read as R's read.csv and
// pandas' read_csv read them, so that a file means the same number to silico as to the analysis that checks it:
// an optional sign, decimal digits with at most one decimal point, and an optional exponent. Go's own syntax, which
// strconv accepts, is wider: 1_000, 0x1p3, Inf, NaN and Infinity parse there, while R and pandas read the first
// two as text (a missing value in a numeric column) and the last as special values no data file here may hold.
// Every number read from a data file goes through dataNumber, and its errors quote acceptedNumbers.

// plainNumber is the one form a number in a data file may take.
var plainNumber = regexp.MustCompile(`^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$`)

// acceptedNumbers says, in errors, what a number in a data file may be.
const acceptedNumbers = "digits with an optional sign, decimal point and exponent, such as 12, 0.5 or 1e3 " +
	"(no digit separators, hexadecimal, Inf or NaN)"

var (
	errNotPlain   = errors.New("not a plain decimal number")
	errOutOfRange = errors.New("out of range")
	errNotWhole   = errors.New("not a whole number")
)

// dataNumber parses s, a field of a data file (trimmed by the caller), in plain decimal or exponent form only,
// finite.
func dataNumber(s string) (float64, error) {
	if !plainNumber.MatchString(s) {
		return 0, errNotPlain
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(v, 0) {
		return 0, errOutOfRange
	}
	return v, nil
}

// dataCount parses s as dataNumber does and wants a whole number ≥ 0 that fits an int32 (12, 12.0 and 1.2e1 are
// the same count, as they are to R).
func dataCount(s string) (int, error) {
	v, err := dataNumber(s)
	switch {
	case err != nil:
		return 0, err
	case v != math.Trunc(v):
		return 0, errNotWhole
	case v < 0 || v > math.MaxInt32:
		return 0, errOutOfRange
	}
	return int(v), nil
}
