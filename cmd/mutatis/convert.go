package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/spf13/cobra"

	"github.com/mutatis-dev/mutatis/convert"
)

// convertOptions are the flags of mutatis convert.
type convertOptions struct {
	outDir       string
	allowPartial bool
}

func newConvertCommand() *cobra.Command {
	var o convertOptions
	cmd := &cobra.Command{
		Use:   "convert PATH... [-o DIR] [--allow-partial]",
		Short: "Convert Kyverno and Gatekeeper mutations to MutatingAdmissionPolicies",
		Long: `convert reads Kyverno ClusterPolicies and Policies (their mutate rules) and
Gatekeeper mutators (Assign, AssignMetadata, ModifySet, AssignImage) from files,
directories (recursively: .yaml, .yml, .json) or stdin ("-"), and writes
MutatingAdmissionPolicies with their bindings (and the params they read): on
standard output, or one file per policy in -o DIR (an existing file is never
overwritten).

What has no MutatingAdmissionPolicy equivalent (Kyverno's apiCall,
globalReference and imageRegistry contexts, mutateExisting, roles and
clusterRoles, JMESPath beyond paths; Gatekeeper's externalData and source:
Generated) is refused per rule with its file, document, field path and why:
a policy with a refused rule is not written, unless --allow-partial, which
writes what converts and lists the rest. Differences the conversion keeps
are printed as notes on standard error (docs/migrate.md).

Exit status: 0 everything converted; 1 something refused (with
--allow-partial too: the rest is written); 2 bad input.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			in, err := convert.ReadPaths(args, cmd.InOrStdin())
			if err != nil {
				return badInput(err)
			}
			res, err := convert.Convert(in)
			if err != nil {
				return badInput(err)
			}
			stderr := cmd.ErrOrStderr()
			for _, s := range res.Summary() {
				fmt.Fprintln(stderr, s)
			}
			if len(res.Refused) > 0 && !o.allowPartial {
				return &exitError{code: exitProblem, err: fmt.Errorf("%d refused: nothing written (--allow-partial writes what converts)", len(res.Refused))}
			}
			if o.outDir == "" {
				if err := res.WriteYAML(cmd.OutOrStdout()); err != nil {
					return badInput(err)
				}
			} else if err := writeConverted(res, o.outDir); err != nil {
				return badInput(err)
			}
			if len(res.Refused) > 0 {
				return &exitError{code: exitProblem}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.outDir, "output-dir", "o", "", "write one file per policy in this directory instead of standard output")
	f.BoolVar(&o.allowPartial, "allow-partial", false, "write what converts even when something is refused (exit status 1 still)")
	return cmd
}

func writeConverted(res *convert.Result, dir string) error {
	files, err := res.Files()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := filepath.Join(dir, n)
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			if errors.Is(err, os.ErrExist) {
				return fmt.Errorf("%s exists: not overwritten", p)
			}
			return err
		}
		if _, err := f.Write(files[n]); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	return nil
}
