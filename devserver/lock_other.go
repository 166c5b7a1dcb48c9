//go:build !unix

package devserver

// lockDir does nothing where flock is unavailable: the caller must make sure
// only one server uses dir.
func lockDir(string) (func() error, error) {
	return func() error { return nil }, nil
}

// InUse cannot tell where flock is unavailable: known is false.
func InUse(string) (inUse, known bool) { return false, false }
