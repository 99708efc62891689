package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/contentpipe/contentpipe/cmd/contentpipe/internal/config"
)

func (a *app) configCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "config",
		Short: "Work with the config file",
		Args:  cobra.NoArgs,
	}
	c.AddCommand(&cobra.Command{
		Use:   "check",
		Short: "Validate the config, topics, schema, prompts and key variables; call nothing",
		Long: `check loads the config file as run would, then the topics file it names, and
reports every problem it finds (not only the first), each with file:line and the
fix: unknown keys, wrong types, bad values, the article schema, the prompt templates
and each link's prompt name, and every key variable that is unset or is not a
variable name. It opens no database and calls no provider. Exit status 0 when
everything is valid, 2 otherwise.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error { return a.configCheck() },
	})
	return c
}

func (a *app) configCheck() error {
	ld := a.configLoader(false)
	cfg, err := ld.Check(a.configPath)
	problems := asProblems(err)
	var topics []config.Topic
	if cfg != nil {
		var terr error
		topics, terr = ld.LoadTopics(cfg.Topics)
		problems = append(problems, asProblems(terr)...)
	}
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintln(a.stdout, p)
		}
		n := "1 problem"
		if len(problems) > 1 {
			n = fmt.Sprintf("%d problems", len(problems))
		}
		fmt.Fprintf(a.stdout, "%s; nothing was called\n", n)
		return exitWith(exitConfig, nil)
	}
	printCheckSummary(a.stdout, cfg, len(topics))
	return nil
}

// asProblems lists the config errors in err (nil: none).
func asProblems(err error) config.Errors {
	if err == nil {
		return nil
	}
	var es config.Errors
	if errors.As(err, &es) {
		return es
	}
	var e *config.Error
	if errors.As(err, &e) {
		return config.Errors{e}
	}
	return config.Errors{{File: "?", Msg: err.Error()}}
}

// printCheckSummary is the short "ok" report of a valid config.
func printCheckSummary(w io.Writer, cfg *config.Config, topics int) {
	names := make([]string, len(cfg.Chain))
	for i, l := range cfg.Chain {
		names[i] = l.Name
	}
	fmt.Fprintf(w, "ok: %s\n", cfg.Path)
	fmt.Fprintf(w, "  chain:   %s (%d links", strings.Join(names, " → "), len(cfg.Chain))
	if n := len(cfg.Candidates); n > 0 {
		fmt.Fprintf(w, ", %d shadow candidates", n)
	}
	fmt.Fprintln(w, ")")
	fmt.Fprintf(w, "  topics:  %d in %s\n", topics, cfg.Topics)
	backend := "SQLite"
	if config.IsPostgres(cfg.Database) {
		backend = "PostgreSQL"
	}
	fmt.Fprintf(w, "  database: %s (%s; not opened)\n", cfg.DatabaseName(), backend)
	fmt.Fprintf(w, "  publish: %s\n", cfg.Publish)
	fmt.Fprintf(w, "  alerts:  %s\n", cfg.Alerts.Telegram)
	for _, warning := range cfg.Warnings {
		fmt.Fprintln(w, "  warning:", warning)
	}
}
