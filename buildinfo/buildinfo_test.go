package buildinfo

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	bi := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "github.com/silicolab/silico", Version: "(devel)"},
		Settings: []debug.BuildSetting{
			{Key: "-buildmode", Value: "exe"},
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "36baa1b2c3d4e5f60718293a4b5c6d7e8f901234"},
			{Key: "vcs.time", Value: "2026-12-01T10:00:00Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	got := FromBuildInfo(bi)
	want := Info{Version: "(devel)", Revision: "36baa1b2c3d4e5f60718293a4b5c6d7e8f901234", Time: "2026-12-01T10:00:00Z",
		Modified: true, Go: "go1.26.8"}
	if got != want {
		t.Fatalf("FromBuildInfo = %+v, want %+v", got, want)
	}
	s := got.String()
	for _, part := range []string{"(devel)", "revision 36baa1b2c3d4e5f60718293a4b5c6d7e8f901234", "(modified)", "of 2026-12-01T10:00:00Z", "go1.26.8"} {
		if !strings.Contains(s, part) {
			t.Errorf("String() = %q, want it to contain %q", s, part)
		}
	}

	bi.Settings = bi.Settings[:2] // no VCS stamp
	bi.Main.Version = "v1.2.0"
	s = FromBuildInfo(bi).String()
	if !strings.HasPrefix(s, "v1.2.0 ") || !strings.Contains(s, "no VCS revision") || strings.Contains(s, "modified") {
		t.Errorf("String() without VCS settings = %q, want the version and a note that no revision was stamped", s)
	}
}

func TestUnmodifiedSaysNothing(t *testing.T) {
	s := Info{Version: "(devel)", Revision: "abc", Modified: false, Go: "go1.26.8"}.String()
	if strings.Contains(s, "modified") {
		t.Errorf("String() = %q: an unmodified build must not say modified", s)
	}
}
