package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/contentpipe/contentpipe/telemetry"
)

// version is set at build time with -ldflags "-X main.version=…"; "dev"
// means "ask the build info".
var version = "dev"

func init() { register((*app).versionCmd) }

func (a *app) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version and the Go and SQLite versions",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			bi, _ := debug.ReadBuildInfo()
			fmt.Fprintf(a.stdout, "contentpipe %s\ngo %s %s/%s\nsqlite %s\n", versionString(version, bi), runtime.Version(), runtime.GOOS, runtime.GOARCH, telemetry.SQLiteVersion())
			return nil
		},
	}
}

// versionString is the version to print: the -ldflags version when one was
// set; else the module version of the build (v1.2.0 when installed with
// `go install …@v1.2.0`, a pseudo-version naming the commit otherwise)
// followed by the commit from the VCS stamp when the build has one
// ("+dirty" and ", modified" for uncommitted changes); "dev" when the build
// knows neither.
func versionString(ldflags string, bi *debug.BuildInfo) string {
	if ldflags != "dev" && ldflags != "" {
		return ldflags
	}
	if bi == nil {
		return "dev"
	}
	v := bi.Main.Version
	if v == "" || v == "(devel)" {
		v = "dev"
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = ", modified"
			}
		}
	}
	if rev == "" {
		return v
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	return fmt.Sprintf("%s (commit %s%s)", v, rev, modified)
}
