// Command release writes what `make dist` and `make image` publish, from
// the binaries the Makefile built into DIST/build/<os>_<arch>/:
//
//	release archives -dist dist -version v0.1.0 -source-date-epoch N -platforms linux/amd64,… LICENSE README.md
//	release image -dist dist -version v0.1.0 -revision SHA -source-date-epoch N [-platforms linux/amd64,linux/arm64]
//
// Both then write DIST/SHA256SUMS over every mutatis_* file of DIST. See
// docs/release.md.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mutatis-dev/mutatis/internal/release"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: release archives|image [flags]")
	}
	fs := flag.NewFlagSet("release "+args[0], flag.ContinueOnError)
	dist := fs.String("dist", "dist", "the release directory; binaries are read from its build/<os>_<arch>/")
	version := fs.String("version", "", "the release version (v1.2.3)")
	epoch := fs.Int64("source-date-epoch", -1, "the time of every entry and timestamp, in seconds since 1970 (the commit's time)")
	revision := fs.String("revision", "", "image: the git commit")
	repository := fs.String("repository", "ghcr.io/mutatis-dev/mutatis", "image: the image name without tag")
	source := fs.String("source", "https://github.com/mutatis-dev/mutatis", "image: the source repository's URL")
	platforms := fs.String("platforms", "linux/amd64,linux/arm64", "the platforms, comma-separated (archives: those of make dist)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *version == "" {
		return fmt.Errorf("-version is required")
	}
	if *epoch < 0 {
		return fmt.Errorf("-source-date-epoch is required")
	}
	mtime := time.Unix(*epoch, 0).UTC()
	switch args[0] {
	case "archives":
		if err := archives(*dist, *version, strings.Split(*platforms, ","), mtime, fs.Args(), stdout); err != nil {
			return err
		}
	case "image":
		im := &release.Image{Repository: *repository, Version: *version, Revision: *revision, Created: mtime,
			Source: *source, Binaries: map[string][]byte{}}
		for _, p := range strings.Split(*platforms, ",") {
			osArch := strings.ReplaceAll(p, "/", "_")
			b, err := os.ReadFile(filepath.Join(*dist, "build", osArch, "mutatis"))
			if err != nil {
				return fmt.Errorf("platform %s: %w (run make dist or make image)", p, err)
			}
			im.Binaries[p] = b
		}
		digest, files, err := im.Write(*dist)
		if err != nil {
			return err
		}
		ref, _ := im.Ref()
		fmt.Fprintf(stdout, "%s@%s (%s) in %s: %s\n", ref, digest, *platforms, filepath.Join(*dist, "image"), strings.Join(files, ", "))
	default:
		return fmt.Errorf("unknown step %q (archives or image)", args[0])
	}
	return writeSums(*dist)
}

// archives writes the archive of each platform, from its binary in
// DIST/build/<os>_<arch>/ and the extra files.
func archives(dist, version string, platforms []string, mtime time.Time, extra []string, stdout io.Writer) error {
	var common []release.File
	for _, f := range extra {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		common = append(common, release.File{Name: filepath.Base(f), Mode: 0o644, Data: data})
	}
	for _, p := range platforms {
		goos, goarch, ok := strings.Cut(p, "/")
		if !ok {
			return fmt.Errorf("platform %q is not OS/ARCH", p)
		}
		bin := release.BinaryName(goos)
		data, err := os.ReadFile(filepath.Join(dist, "build", goos+"_"+goarch, bin))
		if err != nil {
			return fmt.Errorf("platform %s: %w (run make dist)", p, err)
		}
		files := append([]release.File{{Name: bin, Mode: 0o755, Data: data}}, common...)
		name := release.ArchiveName(version, goos, goarch)
		out, err := os.Create(filepath.Join(dist, name))
		if err != nil {
			return err
		}
		err = release.WriteArchive(out, files, mtime, goos == "windows")
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		fmt.Fprintf(stdout, "%s (binary %.1f MiB)\n", filepath.Join(dist, name), float64(len(data))/(1<<20))
	}
	return nil
}

// writeSums writes DIST/SHA256SUMS over every mutatis_* file of DIST.
func writeSums(dist string) error {
	entries, err := os.ReadDir(dist)
	if err != nil {
		return err
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() && strings.HasPrefix(e.Name(), "mutatis_") {
			names = append(names, e.Name())
		}
	}
	sums, err := release.Checksums(dist, names)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dist, "SHA256SUMS"), sums, 0o644)
}
