package modversion

import (
	"runtime/debug"
	"testing"
)

func TestOf(t *testing.T) {
	const mod = "github.com/matrixgo/matrix"
	for _, tc := range []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"no build information", nil, ""},
		{"go install of the module", &debug.BuildInfo{Main: debug.Module{Path: mod, Version: "v1.4.0"}}, "v1.4.0"},
		{"a build in the module's working tree", &debug.BuildInfo{Main: debug.Module{Path: mod, Version: "v1.4.1-0.20261128101010-0123456789ab+dirty"}}, "v1.4.1-0.20261128101010-0123456789ab+dirty"},
		{"a development build", &debug.BuildInfo{Main: debug.Module{Path: mod, Version: "(devel)"}}, ""},
		{"a tool of another module", &debug.BuildInfo{
			Main: debug.Module{Path: "example.com/svc", Version: "(devel)"},
			Deps: []*debug.Module{{Path: "example.com/other", Version: "v9.9.9"}, {Path: mod, Version: "v1.3.0"}},
		}, "v1.3.0"},
		{"replaced by another version", &debug.BuildInfo{
			Main: debug.Module{Path: "example.com/svc"},
			Deps: []*debug.Module{{Path: mod, Version: "v1.3.0", Replace: &debug.Module{Path: "example.com/fork", Version: "v1.3.1"}}},
		}, "v1.3.1"},
		{"replaced by a directory", &debug.BuildInfo{
			Main: debug.Module{Path: "example.com/svc"},
			Deps: []*debug.Module{{Path: mod, Version: "v0.0.0", Replace: &debug.Module{Path: "../matrix"}}},
		}, ""},
		{"not in the build", &debug.BuildInfo{Main: debug.Module{Path: "example.com/svc", Version: "v2.0.0"}}, ""},
	} {
		if got := Of(tc.bi, mod); got != tc.want {
			t.Errorf("%s: Of = %q, want %q", tc.name, got, tc.want)
		}
	}
}
