//go:build unix

package devserver

import "testing"

func TestInUseSeesTheLock(t *testing.T) {
	dir := t.TempDir()
	if inUse, known := InUse(dir); inUse || !known {
		t.Fatalf("InUse of a dir never locked = %v, %v; want false, true", inUse, known)
	}
	unlock, err := lockDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if inUse, _ := InUse(dir); !inUse {
		t.Error("InUse while the lock is held = false")
	}
	if err := unlock(); err != nil {
		t.Fatal(err)
	}
	if inUse, _ := InUse(dir); inUse {
		t.Error("InUse after the lock was released = true")
	}
	// The probe leaves the dir free for a server.
	unlock, err = lockDir(dir)
	if err != nil {
		t.Fatalf("lock after the probes: %v", err)
	}
	_ = unlock()
}
