package main

import (
	"errors"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/mutatis-dev/mutatis/policytest"
)

// newTestInitCommand is `mutatis test init`: a new suite for policies.
func newTestInitCommand() *cobra.Command {
	var policies []string
	var name, write string
	cmd := &cobra.Command{
		Use:   "init POLICY... [--write FILE]",
		Short: "Scaffold a PolicyTest suite for policies: a case per binding with a sample object",
		Long: `init writes a new PolicyTest suite for the policies and bindings of the
paths (files or directories, or --policies): one case per binding (and,
with bindings: auto, per policy that no binding names), each with a sample
object of a built-in resource the policy's and the binding's rules match,
in a namespace and with labels their selectors select, expecting the
binding to apply. Say then what each case must do (objectContains, patch,
denied …). The suite goes to stdout, or to --write FILE (with the policies
named relative to it; an existing file is never overwritten).

Exit status: 0 written; 2 bad input (no policy, an invalid policy, a file
that exists).`,
		RunE: func(cmd *cobra.Command, args []string) error {
			paths := append(args, policies...)
			if len(paths) == 0 {
				return badInput(errors.New("give the policies: mutatis test init POLICY..."))
			}
			dir := "."
			if write != "" {
				dir = filepath.Dir(write)
			}
			text, err := policytest.Scaffold(cmd.Context(), paths, dir, name)
			if err != nil {
				return badInput(err)
			}
			return emitSuite(cmd, write, text)
		},
	}
	cmd.Flags().StringSliceVar(&policies, "policies", nil, "files or directories of policies and bindings (besides the arguments)")
	cmd.Flags().StringVar(&name, "name", "", "the suite's metadata.name (default: the file name)")
	cmd.Flags().StringVar(&write, "write", "", "write the suite to this file (name it *.mutatis-test.yaml) instead of stdout")
	return cmd
}
