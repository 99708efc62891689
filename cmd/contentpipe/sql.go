package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/contentpipe/contentpipe/cmd/contentpipe/internal/config"
	"github.com/contentpipe/contentpipe/telemetry"
)

// dbPath finds the database: from the config when there is one, else the
// default data/pipeline.db (so `sql` works right after `run --demo`).
func (a *app) dbPath(cmd *cobra.Command) (string, error) {
	cfg, err := config.Load(a.configPath, a.getenv)
	if err == nil {
		return cfg.Database, nil
	}
	if !cmd.Flags().Changed("config") && !cmd.Root().PersistentFlags().Changed("config") && config.IsNotExist(err) {
		return "data/pipeline.db", nil
	}
	return "", err
}

func init() { register((*app).sqlCmd) }

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
				p, err := a.dbPath(cmd)
				if err != nil {
					return exitWith(exitConfig, err)
				}
				path = p
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
	cmd.Flags().StringVar(&db, "db", "", "database file (default: the config's database, else data/pipeline.db)")
	return cmd
}
