package convert

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Source names one document of the input: its file, its position among the
// file's documents (1-based), its kind and name, and the rule (Kyverno) it
// concerns, when one.
type Source struct {
	File string `json:"file"`
	Doc  int    `json:"doc"`
	Kind string `json:"kind"`
	Name string `json:"name"`
	Rule string `json:"rule,omitempty"`
}

func (s Source) String() string {
	r := fmt.Sprintf("%s#%d %s/%s", s.File, s.Doc, s.Kind, s.Name)
	if s.Rule != "" {
		r += " rule " + s.Rule
	}
	return r
}

// A Refusal is a part of a source policy that has no MutatingAdmissionPolicy
// equivalent: the policy, the field path and why.
type Refusal struct {
	Source
	Field  string `json:"field"`
	Reason string `json:"reason"`
}

func (r Refusal) String() string {
	return fmt.Sprintf("%s: %s: %s", r.Source, r.Field, r.Reason)
}

// A Note is a difference between the source engine and the converted
// policies that the conversion keeps (it converts, but not exactly).
type Note struct {
	Source
	Field string `json:"field,omitempty"`
	Text  string `json:"text"`
}

func (n Note) String() string {
	if n.Field == "" {
		return fmt.Sprintf("%s: %s", n.Source, n.Text)
	}
	return fmt.Sprintf("%s: %s: %s", n.Source, n.Field, n.Text)
}

// A Converted is one MutatingAdmissionPolicy written for source policies,
// with its binding and the param objects the binding refers to.
type Converted struct {
	From    []Source
	Policy  *admissionregistrationv1.MutatingAdmissionPolicy
	Binding *admissionregistrationv1.MutatingAdmissionPolicyBinding
	Params  []map[string]any
}

// Result is what a conversion gives: the policies, what was refused (a
// policy with a refused rule is not converted at all, so that no partial
// policy is silent) and the named differences.
type Result struct {
	Converted []Converted
	Refused   []Refusal
	Notes     []Note
	// Ignored are the documents that are not mutating policies (validate
	// or generate rules only, other kinds).
	Ignored []Source
}

// An Input is one file's content.
type Input struct {
	Name string
	Data []byte
}

// doc is one decoded document.
type doc struct {
	src Source
	obj map[string]any
}

// Convert converts the Kyverno and Gatekeeper policies of the inputs. Its
// error is for input that cannot be read (bad YAML, a document without
// kind); what cannot be converted is in Result.Refused.
func Convert(inputs []Input) (*Result, error) {
	var docs []doc
	for _, in := range inputs {
		d, err := readDocs(in.Name, in.Data)
		if err != nil {
			return nil, err
		}
		docs = append(docs, d...)
	}
	r := &Result{}
	var gk []doc
	for _, d := range docs {
		group, _, _ := strings.Cut(apiVersion(d.obj), "/")
		switch {
		case group == "mutations.gatekeeper.sh":
			gk = append(gk, d)
		case group == "kyverno.io" && (d.src.Kind == "ClusterPolicy" || d.src.Kind == "Policy"):
			r.kyverno(d)
		case group == "policies.kyverno.io" && (d.src.Kind == "MutatingPolicy" || d.src.Kind == "NamespacedMutatingPolicy"):
			r.kyvernoMutatingPolicy(d)
		default:
			r.Ignored = append(r.Ignored, d.src)
		}
	}
	if len(gk) > 0 {
		r.gatekeeper(gk)
	}
	return r, nil
}

func apiVersion(obj map[string]any) string {
	s, _ := obj["apiVersion"].(string)
	return s
}

// readDocs splits a file into its YAML or JSON documents.
func readDocs(name string, data []byte) ([]doc, error) {
	rd := utilyaml.NewYAMLReader(bufioReader(data))
	var out []doc
	for n := 1; ; n++ {
		raw, err := rd.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", name, n, err)
		}
		if len(bytes.TrimSpace(raw)) == 0 {
			n--
			continue
		}
		var obj map[string]any
		if err := yaml.Unmarshal(raw, &obj); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", name, n, err)
		}
		if obj == nil {
			n--
			continue
		}
		kind, _ := obj["kind"].(string)
		if kind == "" {
			return nil, fmt.Errorf("%s: document %d: kind: required", name, n)
		}
		meta, _ := obj["metadata"].(map[string]any)
		nm, _ := meta["name"].(string)
		out = append(out, doc{src: Source{File: name, Doc: n, Kind: kind, Name: nm}, obj: obj})
	}
}

// WriteYAML writes the converted policies, bindings and params as one
// YAML stream, in the order of Converted.
func (r *Result) WriteYAML(w io.Writer) error {
	for i, c := range r.Converted {
		if i > 0 {
			if _, err := io.WriteString(w, "---\n"); err != nil {
				return err
			}
		}
		if err := c.write(w); err != nil {
			return err
		}
	}
	return nil
}

// Files are the converted policies as files: one per policy (with its
// binding and params), named after the policy.
func (r *Result) Files() (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, c := range r.Converted {
		var b bytes.Buffer
		if err := c.write(&b); err != nil {
			return nil, err
		}
		out[c.Policy.Name+".yaml"] = b.Bytes()
	}
	return out, nil
}

func (c Converted) write(w io.Writer) error {
	var head strings.Builder
	head.WriteString("# Converted by mutatis convert from:\n")
	for _, s := range c.From {
		fmt.Fprintf(&head, "#   %s\n", s)
	}
	if _, err := io.WriteString(w, head.String()); err != nil {
		return err
	}
	objs := []any{c.Policy, c.Binding}
	for _, p := range c.Params {
		objs = append(objs, p)
	}
	for i, o := range objs {
		if i > 0 {
			if _, err := io.WriteString(w, "---\n"); err != nil {
				return err
			}
		}
		m, ok := o.(map[string]any)
		if !ok {
			u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
			if err != nil {
				return err
			}
			if md, ok := u["metadata"].(map[string]any); ok {
				delete(md, "creationTimestamp")
			}
			m = u
		}
		b, err := yaml.Marshal(m)
		if err != nil {
			return err
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// Summary is one line per refusal and note, sorted, for people.
func (r *Result) Summary() []string {
	var out []string
	for _, x := range r.Refused {
		out = append(out, "refused: "+x.String())
	}
	for _, x := range r.Notes {
		out = append(out, "note: "+x.String())
	}
	sort.Strings(out)
	return out
}

func (r *Result) refuse(s Source, field, format string, args ...any) {
	r.Refused = append(r.Refused, Refusal{Source: s, Field: field, Reason: fmt.Sprintf(format, args...)})
}

func (r *Result) note(s Source, field, format string, args ...any) {
	r.Notes = append(r.Notes, Note{Source: s, Field: field, Text: fmt.Sprintf(format, args...)})
}
