// Command gatekeeper records Gatekeeper v3.23's answers for the convert
// corpus: every mutator file of testdata/corpus/gatekeeper through
// Gatekeeper's own mutation system (pkg/mutation: its order, its
// convergence loop) on every input object of testdata/oracle/inputs (the
// corpus objects as kube-apiserver hands them to admission webhooks:
// decoded, defaulted, through the built-in plugins; recorded by convert's
// TestOracleInputs). It writes testdata/oracle/gatekeeper/<file>.yaml.
//
// Run by `make convert-oracle`, never by CI: CI checks the converter
// against the answers committed.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/google/uuid"
	"github.com/open-policy-agent/gatekeeper/v3/apis/mutations/unversioned"
	"github.com/open-policy-agent/gatekeeper/v3/pkg/mutation"
	"github.com/open-policy-agent/gatekeeper/v3/pkg/mutation/mutators/assign"
	"github.com/open-policy-agent/gatekeeper/v3/pkg/mutation/mutators/assignimage"
	"github.com/open-policy-agent/gatekeeper/v3/pkg/mutation/mutators/assignmeta"
	"github.com/open-policy-agent/gatekeeper/v3/pkg/mutation/mutators/modifyset"
	"github.com/open-policy-agent/gatekeeper/v3/pkg/mutation/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gatekeeper TESTDATA")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// Answer is Gatekeeper's result on one object.
type Answer struct {
	Object  string         `json:"object"`
	Mutated bool           `json:"mutated"`
	Error   string         `json:"error,omitempty"`
	Result  map[string]any `json:"result,omitempty"`
}

// Answers are the answers of one corpus file.
type Answers struct {
	Engine  string   `json:"engine"`
	Policy  string   `json:"policy"`
	Answers []Answer `json:"answers"`
}

func run(testdata string) error {
	files, err := filepath.Glob(filepath.Join(testdata, "corpus", "gatekeeper", "*.yaml"))
	if err != nil {
		return err
	}
	sort.Strings(files)
	inputs, err := filepath.Glob(filepath.Join(testdata, "oracle", "inputs", "*.yaml"))
	if err != nil {
		return err
	}
	sort.Strings(inputs)
	out := filepath.Join(testdata, "oracle", "gatekeeper")
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	for _, f := range files {
		sys, err := system(f)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		a := Answers{Engine: "gatekeeper v3.23.1 pkg/mutation", Policy: filepath.ToSlash(filepath.Join("corpus", "gatekeeper", filepath.Base(f)))}
		for _, in := range inputs {
			b, err := os.ReadFile(in)
			if err != nil {
				return err
			}
			var o map[string]any
			if err := yaml.Unmarshal(b, &o); err != nil {
				return fmt.Errorf("%s: %w", in, err)
			}
			u := &unstructured.Unstructured{Object: o}
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: u.GetNamespace(), Labels: map[string]string{"kubernetes.io/metadata.name": u.GetNamespace()}}}
			if u.GetNamespace() == "" {
				ns = nil
			}
			ans := Answer{Object: strings.TrimSuffix(filepath.Base(in), ".yaml")}
			mutated, err := sys.Mutate(context.Background(), &types.Mutable{Object: u, Namespace: ns, Username: "alice", Source: types.SourceTypeOriginal})
			ans.Mutated = mutated
			if err != nil {
				ans.Error = err.Error()
			} else if mutated {
				ans.Result = u.Object
			}
			a.Answers = append(a.Answers, ans)
		}
		b, err := yaml.Marshal(a)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(out, filepath.Base(f)), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// system is Gatekeeper's mutation system with the mutators of one file.
func system(file string) (*mutation.System, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	// A fixed UUID: the answers are the same from one recording to the next.
	sys := mutation.NewSystem(mutation.SystemOpts{NewUUID: func() uuid.UUID { return uuid.UUID{} }})
	rd := utilyaml.NewYAMLReader(bufioReader(data))
	for {
		raw, err := rd.Read()
		if err != nil {
			break
		}
		var head struct {
			Kind string `json:"kind"`
		}
		if err := yaml.Unmarshal(raw, &head); err != nil || head.Kind == "" {
			continue
		}
		var m types.Mutator
		switch head.Kind {
		case "Assign":
			var a unversioned.Assign
			if err := yaml.Unmarshal(raw, &a); err != nil {
				return nil, err
			}
			m, err = assign.MutatorForAssign(&a)
		case "AssignMetadata":
			var a unversioned.AssignMetadata
			if err := yaml.Unmarshal(raw, &a); err != nil {
				return nil, err
			}
			m, err = assignmeta.MutatorForAssignMetadata(&a)
		case "ModifySet":
			var a unversioned.ModifySet
			if err := yaml.Unmarshal(raw, &a); err != nil {
				return nil, err
			}
			// The CRD's default (+kubebuilder:default=merge), which the
			// API server applies before Gatekeeper reads the mutator.
			if a.Spec.Parameters.Operation == "" {
				a.Spec.Parameters.Operation = unversioned.MergeOp
			}
			m, err = modifyset.MutatorForModifySet(&a)
		case "AssignImage":
			var a unversioned.AssignImage
			if err := yaml.Unmarshal(raw, &a); err != nil {
				return nil, err
			}
			m, err = assignimage.MutatorForAssignImage(&a)
		default:
			continue
		}
		if err != nil {
			return nil, err
		}
		if err := sys.Upsert(m); err != nil {
			return nil, err
		}
	}
	return sys, nil
}
