// Command mutatis evaluates, tests and tunes Kubernetes
// MutatingAdmissionPolicies with the semantics of kube-apiserver 1.37.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/spf13/cobra"

	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/explain"
	"github.com/mutatis-dev/mutatis/internal/buildinfo"
	_ "github.com/mutatis-dev/mutatis/internal/gcstart" // the collector of one-shot commands
	"github.com/mutatis-dev/mutatis/internal/warmstart"
	"github.com/mutatis-dev/mutatis/scheme"
)

// Exit codes shared by every command.
const (
	exitOK      = 0
	exitProblem = 1 // lint problems, denied requests, failed tests
	exitUsage   = 2 // bad input: unreadable files, invalid flags
)

// exitError carries an exit code out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func main() {
	warmUp(os.Args)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// warmUp starts, on the second core, the one-time set-up the command of
// args is about to need (internal/warmstart), in the order it needs it:
// cel-go's parser tables and the base CEL environments for the commands
// that compile policies, kube-apiserver's scheme (registered by the first
// object's decoding) for the commands that decode objects.
func warmUp(args []string) {
	var command string
	if len(args) > 1 {
		command = args[1]
	}
	warm := warmstart.Start(command)
	if warmstart.CompilesCEL(command) {
		warm.Then(compiler.Warm)
	}
	if warmstart.DecodesObjects(command) {
		warm.Then(scheme.Warm)
	}
}

// run executes the CLI with args and returns the process exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRootCommand(stdin, stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	if ee, ok := err.(*exitError); ok {
		if ee.err != nil {
			// A denial's message is a webhook's or a policy's words: text,
			// never commands to the terminal.
			fmt.Fprintln(stderr, explain.Printable(ee.err.Error()))
		}
		return ee.code
	}
	fmt.Fprintln(stderr, "error:", explain.Printable(err.Error()))
	return exitUsage
}

func newRootCommand(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "mutatis",
		Short: "A CEL-native engine for Kubernetes MutatingAdmissionPolicies",
		Long: `mutatis evaluates Kubernetes MutatingAdmissionPolicies and their bindings
exactly as kube-apiserver 1.37 does: offline for linting and tests, and in
cluster as an admission webhook.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	// --version prints the one-line form; `mutatis version` the full one.
	info := buildinfo.Read()
	root.Version = info.Version
	root.SetVersionTemplate(info.String() + "\n")
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newLintCommand(), newApplyCommand(), newTestCommand(), newCostCommand(), newBenchCommand(), newServeCommand(), newCertsCommand(), newReviewCommand(), newAuditCommand(), newMigrateCheckCommand(), newConvertCommand(), newLSPCommand(), newVersionCommand())
	return root
}
