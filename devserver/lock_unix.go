//go:build unix

package devserver

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockDir takes an exclusive lock on dir, so that two servers never share one
// database. The kernel drops the lock when the process dies, so a crash never
// leaves dir locked. The returned func releases the lock.
func lockDir(dir string) (func() error, error) {
	path := filepath.Join(dir, "temporal.lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("state dir %s: %w", dir, ErrStateDirInUse)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return f.Close, nil
}

// InUse reports whether a server holds dir's lock: a live process serves it. known is false where locks are not
// available. The probe takes a shared lock for an instant, so a server starting at that moment may find the
// dir in use and must try again.
func InUse(dir string) (inUse, known bool) {
	f, err := os.Open(filepath.Join(dir, "temporal.lock"))
	if err != nil {
		return false, true // no lock file: no server has ever used dir
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		return errors.Is(err, syscall.EWOULDBLOCK), true
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false, true
}
