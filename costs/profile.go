package costs

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/mutatis-dev/mutatis/compiler"
)

// Profile is a realistic size for each input of an expression: how many
// items a list holds, entries a map, characters a string. Its keys are field
// paths with [*] for the items of a list or the values of a map:
// "spec.containers", "containers[*].env", "metadata.labels[*]". A key that
// starts with a root variable (object, oldObject, params, namespaceObject,
// request) sizes that path only; any other key sizes every path that ends
// with it (so "spec.containers" sizes a Pod's containers and, through
// "template.spec.containers", a Deployment's). The longest matching key
// wins. The keys "list", "map" and "string" size every other input of
// that kind.
type Profile struct {
	sizes map[string]int64
	// Sources tells where each size comes from ("default", a file,
	// "--assume"), for the report.
	sources map[string]string
}

// Generic keys of a Profile: the size of an input no other key names.
const (
	ProfileList   = "list"
	ProfileMap    = "map"
	ProfileString = "string"
)

// defaultProfile is the documented realistic profile (docs/cost.md): the
// sizes of well-known lists, maps and strings of built-in kinds on a
// typical production cluster, with room to spare.
var defaultProfile = map[string]int64{
	ProfileList:   10,
	ProfileMap:    16,
	ProfileString: 64,

	"spec.containers":                5,
	"spec.initContainers":            3,
	"spec.ephemeralContainers":       1,
	"containers[*].env":              30,
	"initContainers[*].env":          30,
	"containers[*].envFrom":          4,
	"containers[*].volumeMounts":     10,
	"initContainers[*].volumeMounts": 10,
	"containers[*].ports":            4,
	"containers[*].args":             16,
	"containers[*].command":          4,
	"containers[*].image":            128,
	"initContainers[*].image":        128,
	"spec.volumes":                   12,
	"spec.imagePullSecrets":          2,
	"spec.tolerations":               8,
	"metadata.name":                  63,
	"metadata.generateName":          63,
	"metadata.namespace":             63,
	"metadata.labels":                16,
	"metadata.labels[*]":             63,
	"metadata.annotations":           16,
	"metadata.annotations[*]":        512,
	"metadata.ownerReferences":       2,
	"metadata.finalizers":            4,
	"metadata.managedFields":         8,
	"request.userInfo.groups":        16,
	"data":                           16,
	"data[*]":                        4096,
}

// DefaultProfile returns the documented realistic profile.
func DefaultProfile() *Profile {
	p := &Profile{sizes: map[string]int64{}, sources: map[string]string{}}
	for k, v := range defaultProfile {
		p.sizes[k], p.sources[k] = v, "default"
	}
	return p
}

// Set sizes the inputs key names (see Profile) at n; source names where
// the size comes from. It fails on a malformed key or a negative size.
func (p *Profile) Set(key string, n int64, source string) error {
	if n < 0 {
		return fmt.Errorf("%s: size %d: must not be negative", key, n)
	}
	if err := checkProfileKey(key); err != nil {
		return err
	}
	p.sizes[key], p.sources[key] = n, source
	return nil
}

// Assume applies one --assume PATH=N.
func (p *Profile) Assume(arg string) error {
	key, val, ok := strings.Cut(arg, "=")
	if !ok {
		return fmt.Errorf("--assume %q: want PATH=N, e.g. spec.containers=20", arg)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(val), 10, 64)
	if err != nil {
		return fmt.Errorf("--assume %q: %q is not a whole number", arg, val)
	}
	if err := p.Set(strings.TrimSpace(key), n, "--assume"); err != nil {
		return fmt.Errorf("--assume %q: %w", arg, err)
	}
	return nil
}

// LoadProfileFile applies a profile file: a YAML or JSON map of PATH: N.
func (p *Profile) LoadProfileFile(file string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var m map[string]any
	if err := yaml.Unmarshal(data, &m); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		f, ok := m[k].(float64)
		if !ok || f != float64(int64(f)) {
			return fmt.Errorf("%s: %s: want a whole number of items or characters, got %v", file, k, m[k])
		}
		if err := p.Set(k, int64(f), file); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
	}
	return nil
}

func checkProfileKey(key string) error {
	if key == "" {
		return fmt.Errorf("empty path")
	}
	for _, seg := range strings.Split(key, ".") {
		name := strings.TrimSuffix(seg, "[*]")
		for strings.HasSuffix(name, "[*]") {
			name = strings.TrimSuffix(name, "[*]")
		}
		if name == "" || strings.ContainsAny(name, "[]*= ") {
			return fmt.Errorf("path %q: want field names separated by dots, [*] for items, e.g. containers[*].env", key)
		}
	}
	return nil
}

// profileRoots are the root variables a profile key may start with.
var profileRoots = map[string]bool{
	compiler.ObjectVar: true, compiler.OldObjectVar: true, compiler.ParamsVar: true,
	compiler.NamespaceVar: true, compiler.RequestVar: true,
}

// lookup returns the size of the input at path (a cost-checker path) of
// kind ("list", "map", "string", "bytes" or "" when unknown) and the key
// that gave it.
func (p *Profile) lookup(path []string, kind string) (int64, string) {
	segs := profileSegments(path)
	best, bestLen := "", 0
	for key := range p.sizes {
		if key == ProfileList || key == ProfileMap || key == ProfileString {
			continue
		}
		ks := strings.Split(key, ".")
		if profileRoots[ks[0]] {
			if len(ks) != len(segs) || !equalSegs(ks, segs) {
				continue
			}
		} else if len(ks) >= len(segs) || !equalSegs(ks, segs[len(segs)-len(ks):]) {
			continue
		}
		if len(ks) > bestLen || (len(ks) == bestLen && key < best) {
			best, bestLen = key, len(ks)
		}
	}
	if best != "" {
		return p.sizes[best], best
	}
	switch kind {
	case "list":
		return p.sizes[ProfileList], ProfileList
	case "map":
		return p.sizes[ProfileMap], ProfileMap
	case "string", "bytes":
		return p.sizes[ProfileString], ProfileString
	}
	// Unknown kind (a dynamic value): the largest generic size.
	n, key := p.sizes[ProfileList], ProfileList
	for _, k := range []string{ProfileMap, ProfileString} {
		if p.sizes[k] > n {
			n, key = p.sizes[k], k
		}
	}
	return n, key
}

func equalSegs(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// profileSegments renders a cost-checker path as profile segments:
// ["object", "spec", "containers[*]", "env"].
func profileSegments(path []string) []string {
	var out []string
	for _, p := range path {
		switch p {
		case "@items", "@keys", "@values":
			if len(out) > 0 {
				out[len(out)-1] += "[*]"
			}
		default:
			out = append(out, p)
		}
	}
	return out
}

// Entries returns the profile's sizes sorted by key, with their sources.
func (p *Profile) Entries() []ProfileEntry {
	out := make([]ProfileEntry, 0, len(p.sizes))
	for k, v := range p.sizes {
		out = append(out, ProfileEntry{Path: k, Size: v, Source: p.sources[k]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// ProfileEntry is one size of a Profile.
type ProfileEntry struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	Source string `json:"source"`
}
