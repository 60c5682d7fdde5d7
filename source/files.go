package source

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/mutatis-dev/mutatis/compiler"
	"github.com/mutatis-dev/mutatis/engine"
)

// Files is the Source of static mode: manifests on disk, polled for
// changes every reload interval and read again when they changed.
type Files struct {
	policies, resources []string
	comp                *compiler.Compiler
	metrics             engine.Metrics
	interval            time.Duration
	log                 *slog.Logger

	eng  *Engine // set by LoadInitial
	last string  // the fingerprint of the files in service (or last tried)
}

var _ Source = (*Files)(nil)

// NewFiles returns the Source of o's files (o.Compiler, when nil, is a new
// one, reused across reloads), read again when they change: their names,
// sizes and modification times are compared every interval (0: never).
// log gets a line per load, reload, failed reload and Namespace the
// cluster synthesises.
func NewFiles(o Options, interval time.Duration, log *slog.Logger) (*Files, error) {
	comp := o.Compiler
	if comp == nil {
		var err error
		if comp, err = compiler.New(); err != nil {
			return nil, err
		}
	}
	return &Files{policies: o.Policies, resources: resourcesApart(o.Policies, o.Resources), comp: comp, metrics: o.Metrics, interval: interval, log: log}, nil
}

// LoadInitial reads the files and compiles every policy for the simulated
// cluster of the resources; it fails on files that do not load and on
// policies kube-apiserver would refuse to create.
func (s *Files) LoadInitial(ctx context.Context) error {
	fp := s.fingerprint()
	st, err := s.load(ctx)
	if err != nil {
		return err
	}
	s.eng = st.Engine()
	s.last = fp
	s.log.Info("loaded static policies", "summary", st.Summary)
	return nil
}

// Engine returns the Engine serving the files (nil before LoadInitial).
func (s *Files) Engine() *Engine { return s.eng }

// Ready tells whether LoadInitial has loaded the files.
func (s *Files) Ready() bool { return s.eng != nil }

// Run polls the files every interval and swaps in their policies when they
// changed and load well; a set that fails to load is logged and the
// previous one stays in service. It returns nil when ctx is done.
func (s *Files) Run(ctx context.Context) error {
	if s.interval <= 0 {
		<-ctx.Done()
		return nil
	}
	tick := time.NewTicker(s.interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		s.last = s.reload(ctx, s.eng, s.last)
	}
}

// load reads the files and compiles every policy for the simulated
// cluster of the resources.
func (s *Files) load(ctx context.Context) (*Set, error) {
	return Load(ctx, Options{
		Policies: s.policies, Resources: s.resources, Compiler: s.comp, Metrics: s.metrics,
		OnSynthesize: func(name string) {
			s.log.Info("namespace not in --resources: using one with only the kubernetes.io/metadata.name label", "namespace", name)
		},
	})
}

// fingerprint sums up the names, sizes and modification times of the
// manifest files; a change means the files must be read again.
func (s *Files) fingerprint() string {
	var lines []string
	for _, root := range append(slices.Clone(s.policies), s.resources...) {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				return nil
			}
			if path != root {
				switch strings.ToLower(filepath.Ext(path)) {
				case ".yaml", ".yml", ".json":
				default:
					return nil
				}
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			lines = append(lines, fmt.Sprintf("%s %d %d", path, info.Size(), info.ModTime().UnixNano()))
			return nil
		})
		if err != nil {
			lines = append(lines, root+" error "+err.Error())
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// reload swaps in the files' policies when their fingerprint differs from
// last, and returns the fingerprint now in service (or last tried).
func (s *Files) reload(ctx context.Context, eng *Engine, last string) string {
	fp := s.fingerprint()
	if fp == last {
		return last
	}
	st, err := s.load(ctx)
	if err != nil {
		s.log.Error("reloading static policies failed; the previous ones stay in service", "error", err)
		return fp // do not retry the same broken files at every tick
	}
	// The files' other objects are read again too: a new simulated cluster.
	eng.Replace(st.Config, st.Hooks)
	s.log.Info("reloaded static policies", "summary", st.Summary)
	return fp
}
