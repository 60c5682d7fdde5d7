package convert

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// ReadPaths reads the inputs of `mutatis convert`: files, directories
// (recursively, .yaml, .yml and .json) and "-" for stdin.
func ReadPaths(paths []string, stdin io.Reader) ([]Input, error) {
	var out []Input
	for _, p := range paths {
		if p == "-" {
			b, err := io.ReadAll(stdin)
			if err != nil {
				return nil, fmt.Errorf("stdin: %w", err)
			}
			out = append(out, Input{Name: "-", Data: b})
			continue
		}
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			b, err := os.ReadFile(p)
			if err != nil {
				return nil, err
			}
			out = append(out, Input{Name: p, Data: b})
			continue
		}
		var files []string
		err = filepath.WalkDir(p, func(f string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			switch strings.ToLower(filepath.Ext(f)) {
			case ".yaml", ".yml", ".json":
				if d.Type().IsRegular() {
					files = append(files, f)
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		sort.Strings(files)
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				return nil, err
			}
			out = append(out, Input{Name: f, Data: b})
		}
	}
	return out, nil
}
