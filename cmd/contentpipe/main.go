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

// Exit statuses of SPEC §1.
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

// app holds the global flags and the process environment.
type app struct {
	configPath string
	stdout     io.Writer
	stderr     io.Writer
	getenv     func(string) string
	log        *slog.Logger
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(execute(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv))
}

func execute(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	a := &app{stdout: stdout, stderr: stderr, getenv: getenv}
	a.log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	root := a.rootCmd()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(stderr, "contentpipe:", ee.err)
		}
		return ee.code
	}
	// cobra's own errors: unknown command or flag — usage errors.
	fmt.Fprintln(stderr, "contentpipe:", err)
	return exitConfig
}

func (a *app) rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "contentpipe",
		Short:         "Scheduled LLM publishing through an honest failover chain",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.CompletionOptions.DisableDefaultCmd = true
	root.PersistentFlags().StringVar(&a.configPath, "config", "contentpipe.yaml", "config file")
	for _, c := range commands {
		root.AddCommand(c(a))
	}
	return root
}

// commands are the subcommands; each command's file registers its
// constructor in an init function, so commands can be added independently.
var commands []func(*app) *cobra.Command

func register(c func(*app) *cobra.Command) { commands = append(commands, c) }
