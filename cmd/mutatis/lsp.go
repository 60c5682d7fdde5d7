package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/mutatis-dev/mutatis/lsp"
)

// stdio is the process' standard input and output as one stream.
type stdio struct {
	io.Reader
	io.Writer
}

func (stdio) Close() error { return nil }

func newLSPCommand() *cobra.Command {
	var maxFiles int
	cmd := &cobra.Command{
		Use:   "lsp",
		Short: "Run the language server for admission policies (LSP over stdio)",
		Long: `lsp runs a Language Server Protocol server (3.17, over standard input and
output) for MutatingAdmissionPolicies, ValidatingAdmissionPolicies, their
bindings, params, CRDs and PolicyTest suites: the diagnostics of lint at
their place inside the YAML strings, completion and hover inside CEL,
go to definition and references, quick fixes, and a code lens that runs a
suite. Editors start it (docs/editors.md); it reads the workspace folder
the editor opens.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := lsp.NewServer(lsp.Options{MaxFiles: maxFiles})
			if err != nil {
				return &exitError{code: exitUsage, err: err}
			}
			if err := s.Serve(cmd.Context(), stdio{Reader: cmd.InOrStdin(), Writer: cmd.OutOrStdout()}); err != nil {
				return &exitError{code: exitProblem, err: err}
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&maxFiles, "max-files", 2000, "the most workspace files read at start")
	return cmd
}
