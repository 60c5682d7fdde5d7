package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/mutatis-dev/mutatis/policytest"
)

// newTestConvertCommand is `mutatis test convert`: the PolicyTest of
// another tool's suite.
func newTestConvertCommand() *cobra.Command {
	var write string
	cmd := &cobra.Command{
		Use:   "convert SUITE [--write FILE]",
		Short: "Write the PolicyTest equivalent of a kat, Kyverno CLI or kaptest suite",
		Long: `convert reads a suite in another tool's format — kat's tests/ directory,
a Kyverno CLI kyverno-test.yaml of MutatingAdmissionPolicies, a kaptest
manifest with vapTestSuites (testSuites) or mapTestSuites — as mutatis test runs it (docs/testing.md),
and writes it as a PolicyTest suite: to stdout, or to --write FILE (named
*.mutatis-test.yaml, with the paths relative to it; an existing file is
never overwritten).

Exit status: 0 written; 2 bad input.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := "."
			if write != "" {
				dir = filepath.Dir(write)
			}
			text, err := policytest.Convert(cmd.Context(), args[0], dir)
			if err != nil {
				return badInput(err)
			}
			return emitSuite(cmd, write, text)
		},
	}
	cmd.Flags().StringVar(&write, "write", "", "write the suite to this file instead of stdout")
	return cmd
}

// emitSuite writes a suite to stdout, or to file (which must not exist
// yet) when one is named.
func emitSuite(cmd *cobra.Command, file string, text []byte) error {
	if file == "" {
		_, err := cmd.OutOrStdout().Write(text)
		return err
	}
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return badInput(err)
	}
	if _, err := f.Write(text); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s: run it with mutatis test %s\n", file, file)
	return nil
}
