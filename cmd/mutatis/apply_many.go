package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"gomodules.xyz/jsonpatch/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apiserver/pkg/admission"
	"sigs.k8s.io/yaml"

	"github.com/mutatis-dev/mutatis/cluster"
	"github.com/mutatis-dev/mutatis/explain"
	"github.com/mutatis-dev/mutatis/internal/jsonvalue"
	"github.com/mutatis-dev/mutatis/manifest"
	"github.com/mutatis-dev/mutatis/webhookclient"
)

// appliedObject is the outcome of one object's admission in apply of
// several objects.
type appliedObject struct {
	source         manifest.Source
	kind, ns, name string
	before, after  map[string]any // after is nil when the object was refused
	code           int            // exitOK, exitProblem or exitUsage
	message        string         // why it was refused
	result         *applyResult   // -o result's
}

// label names the object for people: its source, kind and name.
func (a *appliedObject) label() string {
	name := a.name
	if a.ns != "" {
		name = a.ns + "/" + name
	}
	return fmt.Sprintf("%s %s %s", a.source, a.kind, name)
}

// applyMany admits every object through a request of its own, in input
// order (cluster.AdmitEach), prints the admitted ones on stdout and a line
// per object and a total on stderr. The exit status is the worst of the
// objects'. The objects are admitted one at a time: what each prints on
// stderr as it goes (a notice of a namespace not in --resources, written
// when the cluster synthesizes it) comes in input order, and so do the
// webhooks' calls.
func applyMany(ctx context.Context, cmd *cobra.Command, o *applyOptions, sim *cluster.Cluster, chain *cluster.LazyChain, webhooks []webhookclient.Configuration, op admission.Operation, objects []manifest.Object) error {
	stderr := cmd.ErrOrStderr()
	requests := make([]cluster.Request, len(objects))
	for i, obj := range objects {
		// The request's object is decoded in place: keep the input apart.
		object, oldObject := obj.Object.DeepCopy(), (*unstructured.Unstructured)(nil)
		if op == admission.Delete {
			// A DELETE's object is the old object (nothing to print).
			object, oldObject = nil, object
		}
		requests[i] = o.request(op, object, oldObject)
	}
	results := make([]*appliedObject, 0, len(objects))
	err := sim.AdmitEach(ctx, requests, chain, cluster.AdmitOptions{Warm: o.explain}, func(i int, out *cluster.Outcome) error {
		obj := objects[i]
		r := &appliedObject{source: obj.Source, kind: obj.Object.GetKind(), ns: obj.Object.GetNamespace(), name: obj.Object.GetName()}
		name := obj.Source.String()
		var before, after map[string]any
		err := printDecoded(stderr, o, sim, name, out.Decoded, out.DecodeErr)
		if err == nil {
			before, after, err = printAdmission(stderr, o, webhooks, name, out)
		}
		var exit *exitError
		switch {
		case err == nil:
			r.before, r.after = before, after
		case errors.As(err, &exit):
			// The line names the object already.
			r.code, r.message = exit.code, strings.TrimPrefix(exit.Error(), name+": ")
		default:
			r.code, r.message = exitUsage, "error: "+err.Error()
		}
		if o.output == "result" {
			if res, ok := newApplyResult(obj, r.kind, r.ns, r.name, out); ok {
				r.result = res
			} else {
				r.result = badApplyResult(obj, r.kind, r.ns, r.name, strings.TrimPrefix(r.message, "error: "))
			}
		}
		results = append(results, r)
		return nil
	})
	if err != nil {
		return err
	}
	if err := printMany(cmd.OutOrStdout(), o.output, o.color, results); err != nil {
		return err
	}
	code := printSummary(stderr, results)
	if code != exitOK {
		return &exitError{code: code}
	}
	return nil
}

// printSummary prints a line per object and the total, and returns the
// worst exit status of the objects.
func printSummary(w io.Writer, results []*appliedObject) int {
	worst := exitOK
	var admitted, changed, refused, failed int
	for _, r := range results {
		switch r.code {
		case exitOK:
			admitted++
			state := "unchanged"
			if !jsonvalue.JSONEqual(r.before, r.after) {
				state, changed = "changed", changed+1
			}
			fmt.Fprintf(w, "%s: admitted (%s)\n", r.label(), state)
		case exitProblem:
			refused++
			fmt.Fprintf(w, "%s: refused: %s\n", r.label(), r.message)
		default:
			failed++
			fmt.Fprintf(w, "%s: bad input: %s\n", r.label(), r.message)
		}
		worst = max(worst, r.code)
	}
	fmt.Fprintf(w, "%d objects: %d admitted (%d changed), %d refused, %d bad input\n", len(results), admitted, changed, refused, failed)
	return worst
}

// printMany prints the admitted objects in input order: YAML documents, a
// List (-o json), a JSON line per object (-o patch) or a diff per object;
// with -o result, every object's result (refused ones too) as a JSON
// array.
func printMany(w io.Writer, format string, color colorMode, results []*appliedObject) error {
	if format == "result" {
		all := make([]*applyResult, len(results))
		for i, r := range results {
			all[i] = r.result
		}
		return printApplyResults(w, all, true)
	}
	var admitted []*appliedObject
	for _, r := range results {
		if r.after != nil {
			admitted = append(admitted, r)
		}
	}
	switch format {
	case "json":
		items := make([]any, len(admitted))
		for i, r := range admitted {
			items[i] = r.after
		}
		list := map[string]any{"apiVersion": "v1", "kind": "List", "metadata": map[string]any{"resourceVersion": ""}, "items": items}
		return printResult(w, format, color, nil, list)
	case "patch":
		for _, r := range admitted {
			ops, err := objectPatch(r.before, r.after)
			if err != nil {
				return err
			}
			line, err := jsonvalue.Marshal(struct {
				Source    string                `json:"source"`
				Kind      string                `json:"kind"`
				Namespace string                `json:"namespace,omitempty"`
				Name      string                `json:"name"`
				Patch     []jsonpatch.Operation `json:"patch"`
			}{r.source.String(), r.kind, r.ns, r.name, ops})
			if err != nil {
				return err
			}
			if _, err := fmt.Fprintln(w, string(line)); err != nil {
				return err
			}
		}
		return nil
	case "diff":
		for _, r := range admitted {
			text, err := explain.Diff("input "+r.label(), "admitted "+r.label(), r.before, r.after)
			if err != nil {
				return err
			}
			if color.colors(w) {
				text = explain.Colorize(text)
			}
			if _, err := io.WriteString(w, text); err != nil {
				return err
			}
		}
		return nil
	}
	for i, r := range admitted {
		if i > 0 {
			if _, err := io.WriteString(w, "---\n"); err != nil {
				return err
			}
		}
		b, err := yaml.Marshal(r.after)
		if err != nil {
			return err
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}
