// Package flagerr words the command-line errors of silico's binaries. Their flags take two dashes (--address);
// the worker and the simulator once parsed Go flag-package flags, which took one too, so an old script's
// -address now reaches pflag as the shorthands a, d, d, … and fails as "unknown shorthand flag: 'a' in
// -address". Explain adds what to type instead.
package flagerr

import (
	"fmt"
	"regexp"
)

// singleDash matches pflag's error for a long flag given with one dash, and captures the flag's name.
var singleDash = regexp.MustCompile(`^unknown shorthand flag: '.' in -([A-Za-z][A-Za-z0-9-]+)(=.*)?$`)

// Explain returns err, with the flag written the way it is accepted when err is pflag's error for a long flag
// given with a single dash.
func Explain(err error) error {
	if err == nil {
		return nil
	}
	if m := singleDash.FindStringSubmatch(err.Error()); m != nil {
		return fmt.Errorf("%w (flags take two dashes: --%s)", err, m[1])
	}
	return err
}
