// Command gen writes the table of Kubernetes built-in API resources used by package matching.
//
// It reads, from the k8s.io/kubernetes module at the requested tag (fetched through the Go
// module proxy with `go mod download`):
//   - api/openapi-spec/v3/*.json: every route carries x-kubernetes-group-version-kind, which
//     kube-apiserver sets to the kind it registers in its EquivalentResourceRegistry, so the
//     paths give plural, scope, subresources and their kinds;
//   - pkg/controlplane/instance.go: which group/versions kube-apiserver serves by default;
//   - pkg/kubeapiserver/default_storage_factory_builder.go: the special etcd prefixes and the
//     cohabitating resources, which decide equivalence (kube-apiserver keys its
//     EquivalentResourceRegistry by storage prefix).
//
// Group names behind Go package aliases are read from the GroupName constants of k8s.io/api
// and k8s.io/kubernetes/pkg/apis.
package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"log"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/template"

	"github.com/mutatis-dev/mutatis/internal/modsrc"
)

type gvk struct{ Group, Version, Kind string }

type subresource struct {
	Name string
	Kind gvk
}

type resource struct {
	Group, Version, Resource, Kind string
	Namespaced                     bool
	Subresources                   map[string]gvk
}

type gv struct{ Group, Version string }

type gr struct{ Group, Resource string }

func main() {
	version := flag.String("kubernetes", "v1.37.1", "k8s.io/kubernetes tag to read")
	apiVersion := flag.String("api", "v0.37.1", "k8s.io/api version matching the tag")
	out := flag.String("out", "zz_generated_resources.go", "output file")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("gen: ")

	kdir := download("k8s.io/kubernetes@" + *version)
	adir := download("k8s.io/api@" + *apiVersion)

	resources := readOpenAPI(filepath.Join(kdir, "api", "openapi-spec", "v3"))
	enabled, disabled := readDefaultGroupVersions(filepath.Join(kdir, "pkg", "controlplane", "instance.go"), kdir, adir)
	prefixes, cohabitating := readStorage(filepath.Join(kdir, "pkg", "kubeapiserver", "default_storage_factory_builder.go"), kdir, adir)

	seen := map[gv]bool{}
	for _, r := range resources {
		seen[gv{r.Group, r.Version}] = true
	}
	defaults := map[gv]bool{}
	for v := range seen {
		switch {
		case enabled[v]:
			defaults[v] = true
		case disabled[v]:
		case stable.MatchString(v.Version):
			// Served by a delegate server (apiextensions, aggregator): always on.
			defaults[v] = true
		default:
			log.Fatalf("%s/%s is in the OpenAPI spec but instance.go says nothing about it", v.Group, v.Version)
		}
	}

	src := render(*version, resources, defaults, prefixes, cohabitating)
	formatted, err := format.Source(src)
	if err != nil {
		log.Fatalf("formatting output: %v\n%s", err, src)
	}
	if err := os.WriteFile(*out, formatted, 0o644); err != nil {
		log.Fatal(err)
	}
}

var stable = regexp.MustCompile(`^v[0-9]+$`)

func download(mod string) string {
	dir, err := modsrc.Download(context.Background(), mod)
	if err != nil {
		log.Fatal(err)
	}
	return dir
}

type operation struct {
	GVK    *gvk   `json:"x-kubernetes-group-version-kind"`
	Action string `json:"x-kubernetes-action"`
}

func readOpenAPI(dir string) map[string]*resource {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		log.Fatalf("no OpenAPI v3 files in %s: %v", dir, err)
	}
	resources := map[string]*resource{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			log.Fatal(err)
		}
		var doc struct {
			Paths map[string]map[string]json.RawMessage `json:"paths"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			log.Fatalf("%s: %v", f, err)
		}
		for path, item := range doc.Paths {
			group, version, rest, ok := splitPath(path)
			if !ok {
				continue
			}
			namespaced := false
			if len(rest) >= 2 && rest[0] == "namespaces" && rest[1] == "{namespace}" {
				namespaced = true
				rest = rest[2:]
			}
			if len(rest) == 0 || isParam(rest[0]) {
				continue
			}
			res, sub := rest[0], ""
			if len(rest) >= 3 {
				if !isParam(rest[1]) || isParam(rest[2]) {
					log.Fatalf("unexpected path shape %s", path)
				}
				sub = rest[2]
			}
			for method, raw := range item {
				if method == "parameters" {
					continue
				}
				var op operation
				if err := json.Unmarshal(raw, &op); err != nil || op.GVK == nil {
					continue
				}
				key := group + "/" + version + "/" + res
				r := resources[key]
				if r == nil {
					r = &resource{Group: group, Version: version, Resource: res, Subresources: map[string]gvk{}}
					resources[key] = r
				}
				if namespaced {
					r.Namespaced = true
				}
				if sub == "" {
					if r.Kind != "" && r.Kind != op.GVK.Kind {
						log.Fatalf("%s: kind %s and %s", key, r.Kind, op.GVK.Kind)
					}
					if op.GVK.Group != group || op.GVK.Version != version {
						log.Fatalf("%s: main resource kind in another group/version: %+v", key, *op.GVK)
					}
					r.Kind = op.GVK.Kind
					continue
				}
				if prev, ok := r.Subresources[sub]; ok && prev != *op.GVK {
					log.Fatalf("%s/%s: kind %+v and %+v", key, sub, prev, *op.GVK)
				}
				r.Subresources[sub] = *op.GVK
			}
		}
	}
	for key, r := range resources {
		if r.Kind == "" {
			log.Fatalf("%s: subresources without a main resource", key)
		}
	}
	return resources
}

func isParam(s string) bool { return strings.HasPrefix(s, "{") }

// splitPath returns the group, version and the remaining segments of a resource path, or false
// for discovery, watch and non-resource paths.
func splitPath(path string) (group, version string, rest []string, ok bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		group, version, rest = "", parts[1], parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		group, version, rest = parts[1], parts[2], parts[3:]
	default:
		return "", "", nil, false
	}
	if len(rest) == 0 || rest[0] == "watch" {
		return "", "", nil, false
	}
	return group, version, rest, true
}

// parsed Go file with its import aliases resolved to directories.
type goFile struct {
	file    *ast.File
	imports map[string]string // alias -> import path
	kdir    string
	adir    string
}

func parseGo(path, kdir, adir string) goFile {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		log.Fatal(err)
	}
	g := goFile{file: f, imports: map[string]string{}, kdir: kdir, adir: adir}
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		name := filepath.Base(p)
		if imp.Name != nil {
			name = imp.Name.Name
		}
		g.imports[name] = p
	}
	return g
}

// groupOf resolves a package alias to the API group of that package, read from its
// GroupName constant.
func (g goFile) groupOf(alias string) string {
	p, ok := g.imports[alias]
	if !ok {
		log.Fatalf("unknown import alias %q", alias)
	}
	var dir string
	switch {
	case strings.HasPrefix(p, "k8s.io/api/"):
		dir = filepath.Join(g.adir, strings.TrimPrefix(p, "k8s.io/api/"))
		// k8s.io/api/<group>/<version>: GroupName lives in register.go of the version package.
	case strings.HasPrefix(p, "k8s.io/kubernetes/"):
		dir = filepath.Join(g.kdir, strings.TrimPrefix(p, "k8s.io/kubernetes/"))
	default:
		log.Fatalf("cannot resolve the group of %s", p)
	}
	b, err := os.ReadFile(filepath.Join(dir, "register.go"))
	if err != nil {
		log.Fatal(err)
	}
	m := regexp.MustCompile(`const GroupName = "([^"]*)"`).FindSubmatch(b)
	if m == nil {
		log.Fatalf("no GroupName in %s", dir)
	}
	return string(m[1])
}

func (g goFile) versionOf(alias string) string {
	return filepath.Base(g.imports[alias])
}

func readDefaultGroupVersions(path, kdir, adir string) (enabled, disabled map[gv]bool) {
	g := parseGo(path, kdir, adir)
	enabled, disabled = map[gv]bool{}, map[gv]bool{}
	lists := map[string]map[gv]bool{
		"genericStableAPIGroupVersionsEnabledByDefault": enabled,
		"stableAPIGroupVersionsEnabledByDefault":        enabled,
		"genericBetaAPIGroupVersionsDisabledByDefault":  disabled,
		"betaAPIGroupVersionsDisabledByDefault":         disabled,
		"genericAlphaAPIGroupVersionsDisabledByDefault": disabled,
		"alphaAPIGroupVersionsDisabledByDefault":        disabled,
	}
	found := 0
	ast.Inspect(g.file, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || len(vs.Names) != 1 || len(vs.Values) != 1 {
			return true
		}
		set, ok := lists[vs.Names[0].Name]
		if !ok {
			return true
		}
		found++
		lit, ok := vs.Values[0].(*ast.CompositeLit)
		if !ok {
			log.Fatalf("%s is not a literal", vs.Names[0].Name)
		}
		for _, e := range lit.Elts {
			sel, ok := e.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "SchemeGroupVersion" {
				log.Fatalf("%s: unexpected element", vs.Names[0].Name)
			}
			alias := sel.X.(*ast.Ident).Name
			set[gv{g.groupOf(alias), g.versionOf(alias)}] = true
		}
		return true
	})
	if found != len(lists) {
		log.Fatalf("found %d of the %d group/version lists in %s", found, len(lists), path)
	}
	return enabled, disabled
}

func readStorage(path, kdir, adir string) (map[gr]string, [][]gr) {
	g := parseGo(path, kdir, adir)
	prefixes := map[gr]string{}
	var cohabitating [][]gr
	str := func(e ast.Expr) string {
		lit, ok := e.(*ast.BasicLit)
		if !ok {
			log.Fatalf("expected a string literal")
		}
		s, _ := strconv.Unquote(lit.Value)
		return s
	}
	ast.Inspect(g.file, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.ValueSpec:
			if len(n.Names) == 1 && n.Names[0].Name == "SpecialDefaultResourcePrefixes" {
				for _, e := range n.Values[0].(*ast.CompositeLit).Elts {
					kv := e.(*ast.KeyValueExpr)
					var key gr
					for _, f := range kv.Key.(*ast.CompositeLit).Elts {
						fkv := f.(*ast.KeyValueExpr)
						switch fkv.Key.(*ast.Ident).Name {
						case "Group":
							key.Group = str(fkv.Value)
						case "Resource":
							key.Resource = str(fkv.Value)
						}
					}
					prefixes[key] = str(kv.Value)
				}
			}
		case *ast.CallExpr:
			sel, ok := n.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "AddCohabitatingResources" {
				return true
			}
			var set []gr
			for _, a := range n.Args {
				call := a.(*ast.CallExpr)
				fsel := call.Fun.(*ast.SelectorExpr)
				if fsel.Sel.Name != "Resource" {
					log.Fatalf("unexpected cohabitating argument")
				}
				set = append(set, gr{g.groupOf(fsel.X.(*ast.Ident).Name), str(call.Args[0])})
			}
			cohabitating = append(cohabitating, set)
		}
		return true
	})
	if len(prefixes) == 0 || len(cohabitating) == 0 {
		log.Fatalf("no storage prefixes or cohabitating resources found in %s", path)
	}
	return prefixes, cohabitating
}

// source is the generated file; format.Source lays it out. Its
// delimiters are [[ ]], as the Go code it writes holds {{ }}.
var source = template.Must(template.New("source").Delims("[[", "]]").Parse(`// Code generated by internal/gen from k8s.io/kubernetes@[[.Version]]; DO NOT EDIT.

package matching

import "k8s.io/apimachinery/pkg/runtime/schema"

// BuiltinVersion is the Kubernetes release the built-in resource table was generated from.
const BuiltinVersion = [[printf "%q" .Version]]

// builtinGroupVersions lists every built-in group/version and whether kube-apiserver serves
// it by default (pkg/controlplane/instance.go).
var builtinGroupVersions = []builtinGroupVersion{
[[- range .GroupVersions]]
	{Group: [[printf "%q" .Group]], Version: [[printf "%q" .Version]], DefaultEnabled: [[index $.Defaults .]]},
[[- end]]
}

// builtinResources lists every built-in resource of every built-in group/version
// (api/openapi-spec/v3).
var builtinResources = []Resource{
[[- range .Resources]]
	{Group: [[printf "%q" .Group]], Version: [[printf "%q" .Version]], Resource: [[printf "%q" .Resource]], Kind: [[printf "%q" .Kind]], Namespaced: [[.Namespaced]]
	[[- with .Subresources]], Subresources: []Subresource{
		[[- range $i, $s := .]][[if $i]], [[end]]{Name: [[printf "%q" $s.Name]], Kind: schema.GroupVersionKind{Group: [[printf "%q" $s.Kind.Group]], Version: [[printf "%q" $s.Kind.Version]], Kind: [[printf "%q" $s.Kind.Kind]]}}[[end]]}
	[[- end]]},
[[- end]]
}

// builtinStoragePrefixes are kube-apiserver's SpecialDefaultResourcePrefixes; every other
// resource is stored under its lower-cased plural.
var builtinStoragePrefixes = map[schema.GroupResource]string{
[[- range .StoragePrefixes]]
	{Group: [[printf "%q" .Group]], Resource: [[printf "%q" .Resource]]}: [[printf "%q" (index $.Prefixes .)]],
[[- end]]
}

// builtinCohabitating are kube-apiserver's cohabitating resources, in registration order: a
// resource is stored with the first one whose group is served.
var builtinCohabitating = [][]schema.GroupResource{
[[- range .Cohabitating]]
	{[[range $i, $g := .]][[if $i]], [[end]]{Group: [[printf "%q" $g.Group]], Resource: [[printf "%q" $g.Resource]]}[[end]]},
[[- end]]
}
`))

// resourceRow is a resource as the generated table lists it.
type resourceRow struct {
	*resource
	Subresources []subresource
}

func render(version string, resources map[string]*resource, defaults map[gv]bool, prefixes map[gr]string, cohabitating [][]gr) []byte {
	var gvs []gv
	for v := range defaults {
		gvs = append(gvs, v)
	}
	for _, r := range resources {
		v := gv{r.Group, r.Version}
		if !defaults[v] {
			defaults[v] = false
			gvs = append(gvs, v)
		}
	}
	var rows []resourceRow
	for _, k := range slices.Sorted(maps.Keys(resources)) {
		r := resourceRow{resource: resources[k]}
		for _, s := range slices.Sorted(maps.Keys(r.resource.Subresources)) {
			r.Subresources = append(r.Subresources, subresource{Name: s, Kind: r.resource.Subresources[s]})
		}
		rows = append(rows, r)
	}
	var b bytes.Buffer
	err := source.Execute(&b, map[string]any{
		"Version":       version,
		"GroupVersions": uniqueSorted(gvs),
		"Defaults":      defaults,
		"Resources":     rows,
		"StoragePrefixes": slices.SortedFunc(maps.Keys(prefixes), func(a, b gr) int {
			return strings.Compare(a.Group+"/"+a.Resource, b.Group+"/"+b.Resource)
		}),
		"Prefixes":     prefixes,
		"Cohabitating": cohabitating,
	})
	if err != nil {
		log.Fatal(err)
	}
	return b.Bytes()
}

func uniqueSorted(gvs []gv) []gv {
	slices.SortFunc(gvs, func(a, b gv) int {
		return cmp.Or(strings.Compare(a.Group, b.Group), strings.Compare(a.Version, b.Version))
	})
	return slices.Compact(gvs)
}
