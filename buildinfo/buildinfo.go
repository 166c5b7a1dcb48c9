// Package buildinfo says which build of silico a binary is, for its --version: the module version, the VCS
// revision it was built from, whether the work tree had uncommitted changes, and the commit's time, as the Go
// toolchain stamped them into the binary (runtime/debug.ReadBuildInfo). `go build` and `go run` inside a git
// clone stamp the revision (not inside a `git worktree`, whose .git is a file, nor with -buildvcs=false);
// `go version -m BINARY` shows the same settings.
package buildinfo

import (
	"cmp"
	"runtime"
	"runtime/debug"
	"strings"
)

// Info is what a binary knows of its own build. Empty fields were not stamped (a build outside a checkout, or
// with -buildvcs=false).
type Info struct {
	// Version is the main module's version: a tag such as v1.2.0 when installed with `go install …@v1.2.0`,
	// a pseudo-version, or "(devel)" for a build from a checkout.
	Version string
	// Revision is the VCS commit, Time its commit time (RFC 3339, as the toolchain writes it).
	Revision, Time string
	// Modified says the work tree had changes not committed when the binary was built.
	Modified bool
	// Go is the toolchain that built the binary, e.g. go1.26.8.
	Go string
}

// Read returns the running binary's build information.
func Read() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Info{Go: runtime.Version()}
	}
	return FromBuildInfo(bi)
}

// FromBuildInfo extracts Info from the toolchain's record of a build.
func FromBuildInfo(bi *debug.BuildInfo) Info {
	in := Info{Version: bi.Main.Version, Go: bi.GoVersion}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Revision = s.Value
		case "vcs.time":
			in.Time = s.Value
		case "vcs.modified":
			in.Modified = s.Value == "true"
		}
	}
	return in
}

// String is the one-line form --version prints, e.g.
// "(devel) revision 36baa1b2c3d4 (modified) of 2026-12-01T10:00:00Z, go1.26.8 linux/amd64".
func (in Info) String() string {
	var b strings.Builder
	b.WriteString(cmp.Or(in.Version, "(unknown version)"))
	if in.Revision != "" {
		b.WriteString(" revision " + in.Revision)
		if in.Modified {
			b.WriteString(" (modified)")
		}
		if in.Time != "" {
			b.WriteString(" of " + in.Time)
		}
	} else {
		b.WriteString(" (no VCS revision stamped: built outside a git clone, in a git worktree, whose .git is a file the toolchain does not read, or with -buildvcs=false)")
	}
	b.WriteString(", " + cmp.Or(in.Go, runtime.Version()) + " " + runtime.GOOS + "/" + runtime.GOARCH)
	return b.String()
}

// VersionTemplate is the cobra version template of silico's binaries: "NAME " and String, on one line.
const VersionTemplate = "{{.Name}} {{.Version}}\n"
