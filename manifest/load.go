package manifest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	v1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/api/admissionregistration/v1alpha1"
	"k8s.io/api/admissionregistration/v1beta1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Policy is a MutatingAdmissionPolicy read from a manifest, converted to
// admissionregistration.k8s.io/v1, defaulted and validated.
type Policy struct {
	Source Source
	// APIVersion is the apiVersion the manifest was written in.
	APIVersion string
	Policy     *v1.MutatingAdmissionPolicy
}

// Binding is a MutatingAdmissionPolicyBinding read from a manifest,
// converted to admissionregistration.k8s.io/v1, defaulted and validated.
type Binding struct {
	Source Source
	// APIVersion is the apiVersion the manifest was written in.
	APIVersion string
	Binding    *v1.MutatingAdmissionPolicyBinding
}

// ValidatingPolicy is a ValidatingAdmissionPolicy read from a manifest,
// as kube-apiserver would store it: converted to
// admissionregistration.k8s.io/v1, defaulted and validated by its own
// create path (scheme/policyconfig).
type ValidatingPolicy struct {
	Source Source
	// APIVersion is the apiVersion the manifest was written in.
	APIVersion string
	Policy     *v1.ValidatingAdmissionPolicy
}

// ValidatingBinding is a ValidatingAdmissionPolicyBinding read from a
// manifest, as kube-apiserver would store it (ValidatingPolicy).
type ValidatingBinding struct {
	Source Source
	// APIVersion is the apiVersion the manifest was written in.
	APIVersion string
	Binding    *v1.ValidatingAdmissionPolicyBinding
}

// Object is any other Kubernetes object read from a manifest (params,
// Namespaces, CRDs, RBAC, objects to admit, ...).
type Object struct {
	Source Source
	Object *unstructured.Unstructured
}

// Set is everything read from a group of manifests, in input order.
type Set struct {
	Policies []Policy
	Bindings []Binding
	Objects  []Object
	// Rejected holds the policies that decoded but failed API validation.
	// They are never evaluated (the API server refuses them); linters use
	// them to report every problem of a policy at once, CEL included.
	Rejected []Policy
	// ValidatingPolicies and ValidatingBindings are the
	// ValidatingAdmissionPolicies and their bindings, in input order.
	ValidatingPolicies []ValidatingPolicy
	ValidatingBindings []ValidatingBinding
}

// Append adds o's policies, bindings, objects and rejected documents to s's,
// after s's own (in input order).
func (s *Set) Append(o *Set) {
	s.Policies = append(s.Policies, o.Policies...)
	s.Bindings = append(s.Bindings, o.Bindings...)
	s.Objects = append(s.Objects, o.Objects...)
	s.Rejected = append(s.Rejected, o.Rejected...)
	s.ValidatingPolicies = append(s.ValidatingPolicies, o.ValidatingPolicies...)
	s.ValidatingBindings = append(s.ValidatingBindings, o.ValidatingBindings...)
}

// GroupName is the API group of MutatingAdmissionPolicy.
const GroupName = "admissionregistration.k8s.io"

const (
	kindPolicy            = "MutatingAdmissionPolicy"
	kindBinding           = "MutatingAdmissionPolicyBinding"
	kindValidatingPolicy  = "ValidatingAdmissionPolicy"
	kindValidatingBinding = "ValidatingAdmissionPolicyBinding"
)

// Load reads every path: a file (whatever its extension), a directory
// (recursively, only *.yaml, *.yml and *.json, in lexical order) or "-"
// for stdin. A path named is read whatever it is (a named pipe of process
// substitution too); of the files found in a directory only regular files
// (and symbolic links to them) are read: a named pipe, socket or device
// there is reported as a problem of that path without being read. It
// returns every object it could read and, when anything was
// wrong, an ErrorList with every problem of every file. Policies and
// bindings that fail decoding or validation are left out of the Set, as
// kube-apiserver would refuse them; so are later policies or bindings that
// reuse the name of an earlier one.
func Load(ctx context.Context, paths []string, stdin io.Reader) (*Set, error) {
	set := &Set{}
	var errs ErrorList
	readStdin := false
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return set, append(errs, &Error{Source: Source{File: p, Item: -1}, Err: err})
		}
		if p == "-" {
			if readStdin {
				errs = append(errs, &Error{Source: Source{File: p, Item: -1}, Err: errors.New("stdin given more than once")})
				continue
			}
			readStdin = true
			if stdin == nil {
				errs = append(errs, &Error{Source: Source{File: p, Item: -1}, Err: errors.New("no stdin")})
				continue
			}
			data, err := io.ReadAll(stdin)
			if err != nil {
				errs = append(errs, &Error{Source: Source{File: p, Item: -1}, Err: fmt.Errorf("reading stdin: %w", err)})
				continue
			}
			s, fileErrs := parse(p, data)
			set.Append(s)
			errs = append(errs, fileErrs...)
			continue
		}
		files, err := expand(p)
		if err != nil {
			errs = append(errs, &Error{Source: Source{File: p, Item: -1}, Err: err})
		}
		for _, f := range files {
			if err := ctx.Err(); err != nil {
				return set, append(errs, &Error{Source: Source{File: f, Item: -1}, Err: err})
			}
			read := readRegularFile
			if f == p {
				// Named on the command line: read whatever it is, as cat
				// would (a pipe of process substitution, /dev/stdin).
				read = os.ReadFile
			}
			data, err := read(f)
			if err != nil {
				errs = append(errs, &Error{Source: Source{File: f, Item: -1}, Err: err})
				continue
			}
			s, fileErrs := parse(f, data)
			set.Append(s)
			errs = append(errs, fileErrs...)
		}
	}
	errs = append(errs, set.dedupe()...)
	return set, errs.err()
}

// readRegularFile reads a regular file (or a symbolic link to one). Anything
// else is an error naming what it is: reading a named pipe with no writer,
// or a device, would block or never end. The file is opened without
// blocking (see openFlags) and checked once open, so that a pipe swapped in
// after a directory walk listed the path cannot block either.
func readRegularFile(name string) ([]byte, error) {
	f, err := os.OpenFile(name, openFlags, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (%s): only regular files are read", fileKind(info.Mode()))
	}
	return io.ReadAll(f)
}

// fileKind names the type of a file that is not a regular file.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "an irregular file"
}

// expand lists the manifest files of a path: the path itself when it is
// not a directory, else the files of the directory tree whose names end in
// .yaml, .yml or .json, whatever their type (Load reports those that are
// not regular files).
func expand(p string) ([]string, error) {
	info, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return []string{p}, nil
	}
	var files []string
	// WalkDir visits entries in lexical order, which makes the result
	// deterministic.
	err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		switch strings.ToLower(filepath.Ext(path)) {
		case ".yaml", ".yml", ".json":
			files = append(files, path)
		}
		return nil
	})
	return files, err
}

// dedupe drops policies and bindings whose name was already used, since a
// cluster cannot hold two of them.
func (s *Set) dedupe() ErrorList {
	var errs ErrorList
	seenP := map[string]Source{}
	policies := s.Policies[:0]
	for _, p := range s.Policies {
		if first, ok := seenP[p.Policy.Name]; ok {
			errs = append(errs, &Error{Source: p.Source, Kind: kindPolicy, Name: p.Policy.Name, Err: fmt.Errorf("already defined at %s", first)})
			continue
		}
		seenP[p.Policy.Name] = p.Source
		policies = append(policies, p)
	}
	s.Policies = policies
	seenB := map[string]Source{}
	bindings := s.Bindings[:0]
	for _, b := range s.Bindings {
		if first, ok := seenB[b.Binding.Name]; ok {
			errs = append(errs, &Error{Source: b.Source, Kind: kindBinding, Name: b.Binding.Name, Err: fmt.Errorf("already defined at %s", first)})
			continue
		}
		seenB[b.Binding.Name] = b.Source
		bindings = append(bindings, b)
	}
	s.Bindings = bindings
	s.ValidatingPolicies = dedupeNamed(s.ValidatingPolicies, kindValidatingPolicy, &errs, func(p ValidatingPolicy) (string, Source) { return p.Policy.Name, p.Source })
	s.ValidatingBindings = dedupeNamed(s.ValidatingBindings, kindValidatingBinding, &errs, func(b ValidatingBinding) (string, Source) { return b.Binding.Name, b.Source })
	return errs
}

// dedupeNamed drops the items of list whose name an earlier one used,
// with an error each in errs.
func dedupeNamed[T any](list []T, kind string, errs *ErrorList, id func(T) (string, Source)) []T {
	seen := map[string]Source{}
	out := list[:0]
	for _, it := range list {
		name, src := id(it)
		if first, ok := seen[name]; ok {
			*errs = append(*errs, &Error{Source: src, Kind: kind, Name: name, Err: fmt.Errorf("already defined at %s", first)})
			continue
		}
		seen[name] = src
		out = append(out, it)
	}
	return out
}

// Parse reads the YAML or JSON data of one file (named file in Sources and
// errors). Like Load, it returns what it could read and an ErrorList.
func Parse(file string, data []byte) (*Set, error) {
	set, errs := parse(file, data)
	errs = append(errs, set.dedupe()...)
	return set, errs.err()
}

// Document is one YAML document or JSON value of a file, as Load cuts
// it: Index is the Doc of the Sources of its objects, Line the 1-based line
// of its first line in the file.
type Document struct {
	Index, Line int
	Data        []byte
	JSON        bool
}

// Documents cuts the data of a file into its documents exactly as Load
// does (a byte order mark dropped, "---" separator lines, a leading blank
// document skipped, JSON streams), up to the first error that cuts the
// input short. Tools that need more of a document than Load keeps (the
// positions of its fields) read it again with this.
func Documents(data []byte) []Document {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	docs, _ := splitDocuments(data)
	out := make([]Document, len(docs))
	for i, d := range docs {
		out[i] = Document{Index: d.index, Line: d.line, Data: d.data, JSON: d.json}
	}
	return out
}

// document is one YAML document or JSON value of a file.
type document struct {
	index int
	line  int // 1-based line of its first line in the file
	data  []byte
	json  bool
}

func parse(file string, data []byte) (*Set, ErrorList) {
	set := &Set{}
	var errs ErrorList
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	docs, splitErr := splitDocuments(data)
	for _, d := range docs {
		src := Source{File: file, Doc: d.index, Item: -1}
		errs = append(errs, parseDocument(set, src, d)...)
	}
	if splitErr != nil {
		// It cut the file short, so it comes after the documents before it.
		splitErr.Source.File = file
		errs = append(errs, splitErr)
	}
	return set, errs
}

// splitDocuments cuts data into YAML documents at "---" separator lines
// (the rule of k8s.io/apimachinery/pkg/util/yaml.YAMLReader), or into JSON
// values when data starts with '{' or '[' and is a valid JSON stream.
// Documents are returned even when an error cuts the input short.
func splitDocuments(data []byte) ([]document, *Error) {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
		if docs, ok, err := splitJSON(data); ok {
			return docs, err
		}
		// Not a JSON stream: maybe YAML flow style. Read it as YAML, which
		// also reports the syntax error with its line.
	}
	var docs []document
	var cur []byte
	start, line, index := 1, 0, 0
	flush := func(next int) {
		// Text before the first separator is a document unless it is only
		// blank lines and comments (a license header, say).
		if index > 0 || !blank(cur) {
			docs = append(docs, document{index: index, line: start, data: cur})
			index++
		}
		cur = nil
		start = next
	}
	rest := data
	for len(rest) > 0 {
		line++
		var l []byte
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			l, rest = rest[:i+1], rest[i+1:]
		} else {
			l, rest = rest, nil
		}
		if bytes.HasPrefix(l, []byte("---")) {
			after := strings.TrimSpace(string(l[3:]))
			if after == "" || after[0] == '#' {
				flush(line + 1)
				continue
			}
			// Keep what came before; the rest of the file is lost, as
			// with YAMLReader.
			flush(line + 1)
			return docs, &Error{Source: Source{Doc: index, Item: -1}, Line: line, Err: fmt.Errorf("invalid YAML document separator: %s", after)}
		}
		cur = append(cur, l...)
	}
	if len(cur) > 0 {
		docs = append(docs, document{index: index, line: start, data: cur})
	}
	return docs, nil
}

// blank reports whether YAML text holds only blank lines and comments.
func blank(text []byte) bool {
	for _, l := range bytes.Split(text, []byte("\n")) {
		l = bytes.TrimSpace(l)
		if len(l) > 0 && l[0] != '#' {
			return false
		}
	}
	return true
}

// splitJSON splits a stream of JSON values. ok is false when the first
// value is not JSON (the caller then reads the input as YAML); a syntax
// error in a later value ends the stream with an error naming its line.
func splitJSON(data []byte) (docs []document, ok bool, err *Error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	for i := 0; ; i++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if err == io.EOF {
				return docs, true, nil
			}
			if i == 0 {
				return nil, false, nil
			}
			offset := dec.InputOffset()
			var syn *json.SyntaxError
			if errors.As(err, &syn) {
				offset = syn.Offset
			}
			if offset > int64(len(data)) {
				offset = int64(len(data))
			}
			line := 1 + bytes.Count(data[:offset], []byte("\n"))
			return docs, true, &Error{Source: Source{Doc: i, Item: -1}, Line: line, Err: err}
		}
		end := int(dec.InputOffset())
		start := end - len(raw)
		docs = append(docs, document{index: i, line: 1 + bytes.Count(data[:start], []byte("\n")), data: raw, json: true})
	}
}

var lineRE = regexp.MustCompile(`line (\d+)`)

// yamlError turns a YAML error on a document into an Error whose line
// numbers count from the start of the file.
func yamlError(src Source, d document, err error) *Error {
	e := &Error{Source: src, Err: err}
	msg := lineRE.ReplaceAllStringFunc(err.Error(), func(m string) string {
		n, convErr := strconv.Atoi(m[len("line "):])
		if convErr != nil {
			return m
		}
		abs := d.line + n - 1
		if e.Line == 0 {
			e.Line = abs
		}
		return "line " + strconv.Itoa(abs)
	})
	e.Err = errors.New(msg)
	return e
}

func parseDocument(set *Set, src Source, d document) ErrorList {
	var js []byte
	if d.json {
		js = d.data
	} else {
		var err error
		js, err = yaml.YAMLToJSONStrict(d.data)
		if err != nil {
			return ErrorList{yamlError(src, d, err)}
		}
	}
	js = bytes.TrimSpace(js)
	if len(js) == 0 || bytes.Equal(js, []byte("null")) {
		return nil // empty document
	}
	var obj map[string]any
	strictErrs, err := sigsjson.UnmarshalStrict(js, &obj, sigsjson.DisallowDuplicateFields)
	if err != nil {
		return ErrorList{{Source: src, Line: d.line, Err: fmt.Errorf("document is not an object: %w", err)}}
	}
	if len(strictErrs) > 0 {
		return ErrorList{{Source: src, Line: d.line, Err: runtime.NewStrictDecodingError(strictErrs)}}
	}
	if obj == nil {
		return nil
	}
	apiVersion, kind, err := typeOf(obj)
	if err != nil {
		return ErrorList{{Source: src, Line: d.line, Err: err}}
	}
	if items, ok := obj["items"]; ok && strings.HasSuffix(kind, "List") {
		list, ok := items.([]any)
		if !ok && items != nil {
			return ErrorList{{Source: src, Line: d.line, Kind: kind, Err: errors.New("items must be a list")}}
		}
		var errs ErrorList
		for i, it := range list {
			isrc := src
			isrc.Item = i
			m, ok := it.(map[string]any)
			if !ok {
				errs = append(errs, &Error{Source: isrc, Err: errors.New("list item is not an object")})
				continue
			}
			// Items of typed lists (FooList) may omit their type, as the
			// API server leaves it out; items of a v1 List must carry it.
			if kind != "List" {
				if _, ok := m["apiVersion"]; !ok {
					m["apiVersion"] = apiVersion
				}
				if _, ok := m["kind"]; !ok {
					m["kind"] = strings.TrimSuffix(kind, "List")
				}
			}
			ijs, err := json.Marshal(m)
			if err != nil {
				errs = append(errs, &Error{Source: isrc, Err: err})
				continue
			}
			errs = append(errs, addObject(set, isrc, ijs, m)...)
		}
		return errs
	}
	return addObject(set, src, js, obj)
}

// typeOf returns the apiVersion and kind of obj.
func typeOf(obj map[string]any) (string, string, error) {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	var missing []string
	if apiVersion == "" {
		missing = append(missing, "apiVersion not set")
	}
	if kind == "" {
		missing = append(missing, "kind not set")
	}
	if len(missing) > 0 {
		return "", "", fmt.Errorf("invalid object: %s", strings.Join(missing, ", "))
	}
	return apiVersion, kind, nil
}

func addObject(set *Set, src Source, js []byte, obj map[string]any) ErrorList {
	apiVersion, kind, err := typeOf(obj)
	if err != nil {
		return ErrorList{{Source: src, Err: err}}
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return ErrorList{{Source: src, Kind: kind, Err: err}}
	}
	name := ""
	if md, ok := obj["metadata"].(map[string]any); ok {
		name, _ = md["name"].(string)
	}
	if gv.Group == GroupName && (kind == kindValidatingPolicy || kind == kindValidatingBinding) {
		return addValidating(set, src, js, gv.Version, apiVersion, kind, name)
	}
	if gv.Group != GroupName || (kind != kindPolicy && kind != kindBinding) {
		set.Objects = append(set.Objects, Object{Source: src, Object: &unstructured.Unstructured{Object: obj}})
		return nil
	}
	fail := func(err error) ErrorList {
		return ErrorList{{Source: src, Kind: kind, Name: name, Err: err}}
	}
	switch kind {
	case kindPolicy:
		var p *v1.MutatingAdmissionPolicy
		switch gv.Version {
		case "v1":
			p = &v1.MutatingAdmissionPolicy{}
			if err := decodeStrict(js, p); err != nil {
				return fail(err)
			}
		case "v1beta1":
			in := &v1beta1.MutatingAdmissionPolicy{}
			if err := decodeStrict(js, in); err != nil {
				return fail(err)
			}
			p = &v1.MutatingAdmissionPolicy{}
			if err := convertToV1(in, p, kind); err != nil {
				return fail(err)
			}
		case "v1alpha1":
			in := &v1alpha1.MutatingAdmissionPolicy{}
			if err := decodeStrict(js, in); err != nil {
				return fail(err)
			}
			p = &v1.MutatingAdmissionPolicy{}
			if err := convertToV1(in, p, kind); err != nil {
				return fail(err)
			}
		default:
			return fail(notRegistered(kind, apiVersion))
		}
		DefaultPolicy(p)
		if errs := ValidatePolicy(p); len(errs) > 0 {
			set.Rejected = append(set.Rejected, Policy{Source: src, APIVersion: apiVersion, Policy: p})
			return ErrorList{{Source: src, Kind: kind, Name: p.Name, Errs: errs}}
		}
		set.Policies = append(set.Policies, Policy{Source: src, APIVersion: apiVersion, Policy: p})
	case kindBinding:
		var b *v1.MutatingAdmissionPolicyBinding
		switch gv.Version {
		case "v1":
			b = &v1.MutatingAdmissionPolicyBinding{}
			if err := decodeStrict(js, b); err != nil {
				return fail(err)
			}
		case "v1beta1":
			in := &v1beta1.MutatingAdmissionPolicyBinding{}
			if err := decodeStrict(js, in); err != nil {
				return fail(err)
			}
			b = &v1.MutatingAdmissionPolicyBinding{}
			if err := convertToV1(in, b, kind); err != nil {
				return fail(err)
			}
		case "v1alpha1":
			in := &v1alpha1.MutatingAdmissionPolicyBinding{}
			if err := decodeStrict(js, in); err != nil {
				return fail(err)
			}
			b = &v1.MutatingAdmissionPolicyBinding{}
			if err := convertToV1(in, b, kind); err != nil {
				return fail(err)
			}
			defaultV1alpha1ParamRef(b)
		default:
			return fail(notRegistered(kind, apiVersion))
		}
		DefaultBinding(b)
		if errs := ValidateBinding(b); len(errs) > 0 {
			return ErrorList{{Source: src, Kind: kind, Name: b.Name, Errs: errs}}
		}
		set.Bindings = append(set.Bindings, Binding{Source: src, APIVersion: apiVersion, Binding: b})
	}
	return nil
}

func notRegistered(kind, apiVersion string) error {
	return fmt.Errorf("no kind %q is registered for version %q", kind, apiVersion)
}

// decodeStrict decodes JSON into a typed object the way kube-apiserver's
// strict field validation does: case-sensitive, and unknown or duplicate
// fields are reported by path ("strict decoding error: unknown field
// \"spec.foo\"").
func decodeStrict(js []byte, into any) error {
	strictErrs, err := sigsjson.UnmarshalStrict(js, into, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		return err
	}
	if len(strictErrs) > 0 {
		return runtime.NewStrictDecodingError(strictErrs)
	}
	return nil
}

// APIObjects returns the set's policies and bindings as API objects, in
// load order: what the compiler, the engine and binding checks take.
func (s *Set) APIObjects() ([]*v1.MutatingAdmissionPolicy, []*v1.MutatingAdmissionPolicyBinding) {
	policies := make([]*v1.MutatingAdmissionPolicy, len(s.Policies))
	for i, p := range s.Policies {
		policies[i] = p.Policy
	}
	bindings := make([]*v1.MutatingAdmissionPolicyBinding, len(s.Bindings))
	for i, b := range s.Bindings {
		bindings[i] = b.Binding
	}
	return policies, bindings
}

// DecodeStrict decodes JSON into a typed object with the strictness
// kube-apiserver's strict field validation applies (unknown and duplicate
// fields are errors naming their path), for the packages that read other
// admissionregistration kinds out of a Set's Objects.
func DecodeStrict(js []byte, into any) error { return decodeStrict(js, into) }
