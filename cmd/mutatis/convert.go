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
	withTests    bool
	objects      []string
	answers      []string
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

--with-tests (with -o DIR) writes DIR/converted.mutatis-test.yaml, a
PolicyTest suite with a case per object of --objects that --answers holds
the source engine's result for (matched by apiVersion, kind, namespace and
name: the output of kyverno apply -o, or of the source webhook): run it with
mutatis test to keep the proof (docs/migrate.md).

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
			if o.withTests && (o.outDir == "" || len(o.objects) == 0 || len(o.answers) == 0) {
				return badInput(errors.New("--with-tests needs -o DIR, --objects and --answers"))
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
			if o.withTests {
				if err := writeSuite(cmd, res, o); err != nil {
					return badInput(err)
				}
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
	f.BoolVar(&o.withTests, "with-tests", false, "write a PolicyTest suite of the source engine's answers beside the policies (needs -o, --objects, --answers)")
	f.StringSliceVar(&o.objects, "objects", nil, "files or directories of sample objects, for --with-tests")
	f.StringSliceVar(&o.answers, "answers", nil, "files or directories of the source engine's results on --objects, for --with-tests")
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

func writeSuite(cmd *cobra.Command, res *convert.Result, o convertOptions) error {
	read := func(paths []string) ([]map[string]any, error) {
		in, err := convert.ReadPaths(paths, cmd.InOrStdin())
		if err != nil {
			return nil, err
		}
		return convert.ReadObjects(in)
	}
	objs, err := read(o.objects)
	if err != nil {
		return err
	}
	results, err := read(o.answers)
	if err != nil {
		return err
	}
	files, err := res.Files()
	if err != nil {
		return err
	}
	var names []string
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	pairs := convert.Pair(objs, results)
	if len(pairs) == 0 {
		return errors.New("--answers holds no result for any object of --objects")
	}
	b, err := convert.Suite("converted", names, pairs)
	if err != nil {
		return err
	}
	p := filepath.Join(o.outDir, "converted.mutatis-test.yaml")
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s: %d cases\n", p, len(pairs))
	return f.Close()
}
