// Command contentpipe is a scheduled publishing job that writes articles
// with LLMs through an ordered failover chain of providers. This package is
// the composition root: flags, config, environment, wiring; no policy.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// Exit statuses of every command (README.md, Commands).
const (
	exitOK      = 0
	exitPartial = 1 // a job went to review or was deferred; unhealthy; unknown id; SQL error
	exitConfig  = 2 // bad config or usage; nothing done
	exitHalted  = 3 // halted on an auth failure
)

// exitError carries an exit status out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

func exitWith(code int, err error) error { return &exitError{code: code, err: err} }

// app holds the global flags and the process environment. stdout and
// stderr carry timestamps on every line once setupOutput found them not to
// be a terminal; logOut is the process's stderr under the slog logger.
type app struct {
	configPath string
	logFormat  string // --log-format: text (default) or json
	logLevel   string // --log-level: debug, info (default), warn, error
	stdout     io.Writer
	stderr     io.Writer
	logOut     io.Writer
	getenv     func(string) string
	log        *slog.Logger
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	done := make(chan struct{})
	go stopWatch(ctx, done, stopGrace, os.Stderr, os.Exit)
	code := execute(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	close(done)
	os.Exit(code)
}

func execute(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	a := &app{stdout: stdout, stderr: stderr, logOut: stderr, getenv: getenv, logFormat: "text", logLevel: "info"}
	a.log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	root := a.rootCmd()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	defer a.flushOutput()
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			a.printError(ee.err)
		}
		return ee.code
	}
	// cobra's own errors: unknown command or flag — usage errors.
	a.printError(err)
	return exitConfig
}

func (a *app) rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "contentpipe",
		Short:         "Scheduled LLM publishing through an honest failover chain",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&a.configPath, "config", "contentpipe.yaml", "config file")
	root.PersistentFlags().StringVar(&a.logFormat, "log-format", a.logFormat, "log format on stderr: text or json (json also wraps plain output lines when not on a terminal)")
	root.PersistentFlags().StringVar(&a.logLevel, "log-level", a.logLevel, "lowest level logged: debug, info, warn or error")
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		runningCommand.Store(topCommand(cmd))
		return a.setupOutput(topCommand(cmd))
	}
	for _, c := range a.commands() {
		root.AddCommand(c)
	}
	return root
}

// topCommand is the name of the subcommand of root that cmd belongs to
// ("alerts" for `alerts flush`).
func topCommand(cmd *cobra.Command) string {
	for cmd.HasParent() && cmd.Parent().HasParent() {
		cmd = cmd.Parent()
	}
	return cmd.Name()
}

// commands are the subcommands, one line each; each is built in its own
// file.
func (a *app) commands() []*cobra.Command {
	return []*cobra.Command{
		a.runCmd(),
		a.healthCmd(),
		a.reportCmd(),
		a.reviewCmd(),
		a.sqlCmd(),
		a.serveCmd(),
		a.simulateCmd(),
		a.configCmd(),
		a.promptsCmd(),
		a.topicsCmd(),
		a.alertsCmd(),
		a.dbCmd(),
		a.versionCmd(),
	}
}
