package main

import (
	"os"
	"runtime"
	"runtime/debug"
)

// largeSpecBytes is the file size from which a spec is large here: the size from which specfile reads a YAML
// item bank in parts.
const largeSpecBytes = 4 << 20

// collectOftenFor lowers the garbage collector's heap growth to 25% (from Go's default of 100%) while a large spec
// at path is parsed and encoded, and returns the function that ends that phase. A large spec's cost is its
// transient copies (the parser's tree beside the file's bytes, the spec's JSON beside the spec), and the
// default lets the heap grow to twice what is live before collecting: for a 52 MB item bank, a peak near 1 GB
// where 300 MB is live. The phase lasts seconds and costs a few more collections. GOGC set in the environment
// is left alone. done may be called more than once; it acts once.
func collectOftenFor(path string) (done func()) {
	fi, err := os.Stat(path)
	if err != nil || fi.Size() < largeSpecBytes || os.Getenv("GOGC") != "" {
		return func() {}
	}
	prev := debug.SetGCPercent(25)
	ended := false
	return func() {
		if ended {
			return
		}
		ended = true
		debug.SetGCPercent(prev)
		// json.Marshal keeps its largest buffer (as large as the spec's JSON) in a sync.Pool, which drops it only
		// after two collections without a Marshal in between: here, before the run starts encoding again.
		runtime.GC()
		runtime.GC()
	}
}
