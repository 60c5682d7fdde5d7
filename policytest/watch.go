package policytest

import (
	"context"
	"os"
	"time"
)

// Watch calls run, then again whenever a file changes: one of the files
// run returned (suites, policies, resources — modified, created or
// removed) or the set of suites Discover finds under paths. It looks at
// modification times every interval and returns when ctx is done.
func Watch(ctx context.Context, paths []string, interval time.Duration, run func(context.Context) []string) error {
	if interval <= 0 {
		interval = 500 * time.Millisecond
	}
	var files []string
	for {
		// Files known before the run keep the state they had before it, so
		// that an edit made while it runs is seen; a suite that appeared
		// during the run counts as a change.
		pre := snapshot(paths, files)
		files = run(ctx)
		before := snapshot(paths, files)
		for k := range before {
			if v, ok := pre[k]; ok {
				before[k] = v
			} else if IsSuiteFile(k) {
				before[k] = fileState{}
			}
		}
		t := time.NewTicker(interval)
		for changed := false; !changed; {
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
				changed = !sameSnapshot(before, snapshot(paths, files))
			}
		}
		t.Stop()
	}
}

type fileState struct {
	mod  time.Time
	size int64
	ok   bool
}

func snapshot(paths, files []string) map[string]fileState {
	all := append([]string{}, files...)
	if found, err := Discover(paths); err == nil {
		all = append(all, found...)
	}
	out := make(map[string]fileState, len(all))
	for _, f := range all {
		st, err := os.Stat(f)
		if err != nil {
			out[f] = fileState{}
			continue
		}
		out[f] = fileState{mod: st.ModTime(), size: st.Size(), ok: true}
	}
	return out
}

func sameSnapshot(a, b map[string]fileState) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || !v.mod.Equal(w.mod) || v.size != w.size || v.ok != w.ok {
			return false
		}
	}
	return true
}
