package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/contentpipe/contentpipe/telemetry"
)

func (a *app) sqlCmd() *cobra.Command {
	var format, db string
	cmd := &cobra.Command{
		Use:   `sql "QUERY"`,
		Short: "Run a read-only SQL query against the database",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch format {
			case "table", "csv", "json":
			default:
				return exitWith(exitConfig, fmt.Errorf("--format %q: use table, csv or json", format))
			}
			path := db
			if path == "" {
				cfg, err := a.readConfig(cmd)
				if err != nil {
					return exitWith(exitConfig, err)
				}
				path = cfg.Database
			}
			store, err := telemetry.OpenReadOnly(path)
			if err != nil {
				return exitWith(exitPartial, err)
			}
			defer store.Close()
			cols, rows, err := store.Query(cmd.Context(), args[0])
			if err != nil {
				return exitWith(exitPartial, err)
			}
			if err := telemetry.WriteTable(a.stdout, cols, rows, format); err != nil {
				return exitWith(exitPartial, err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "table", "output format: table, csv or json")
	cmd.Flags().StringVar(&db, "db", "", "database: a SQLite file, sqlite:PATH or a postgres:// URL (default: the config's database, else data/pipeline.db)")
	return cmd
}
