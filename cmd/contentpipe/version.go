package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/contentpipe/contentpipe/telemetry"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func init() { register((*app).versionCmd) }

func (a *app) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version and the Go and SQLite versions",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := version
			if bi, ok := debug.ReadBuildInfo(); ok && v == "dev" {
				for _, s := range bi.Settings {
					if s.Key == "vcs.revision" && len(s.Value) >= 12 {
						v = "dev+" + s.Value[:12]
					}
				}
			}
			fmt.Fprintf(a.stdout, "contentpipe %s\ngo %s %s/%s\nsqlite %s\n", v, runtime.Version(), runtime.GOOS, runtime.GOARCH, telemetry.SQLiteVersion())
			return nil
		},
	}
}
