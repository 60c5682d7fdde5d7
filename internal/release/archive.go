// Package release makes what `make dist` and `make image` publish: release
// archives with their SHA256SUMS, and the OCI image of mutatis. Everything
// it writes is a function of its inputs (the binaries, the files, the
// version and SOURCE_DATE_EPOCH): no build machine's clock, user, file
// order or permissions leak into an archive or an image, so the same
// commit gives the same bytes and the same image digest everywhere.
package release

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// File is one file of an archive or image layer.
type File struct {
	// Name is the slash-separated path inside the archive.
	Name string
	// Mode is the permission bits (0o755 for executables).
	Mode os.FileMode
	// Data is the content.
	Data []byte
}

// Dir is a directory entry of an image layer.
type Dir struct {
	Name string
	// Mode is the tar mode bits, e.g. 0o1777 for a sticky, world-writable
	// directory.
	Mode int64
}

// ArchiveName is the name of the release archive of a platform:
// mutatis_<version>_<os>_<arch>.tar.gz, or .zip for Windows.
func ArchiveName(version, goos, goarch string) string {
	ext := ".tar.gz"
	if goos == "windows" {
		ext = ".zip"
	}
	return fmt.Sprintf("mutatis_%s_%s_%s%s", version, goos, goarch, ext)
}

// BinaryName is the executable's name on goos.
func BinaryName(goos string) string {
	if goos == "windows" {
		return "mutatis.exe"
	}
	return "mutatis"
}

// WriteArchive writes files as a tar.gz archive or, when zipped, a zip
// archive, in name order, every entry with modification time mtime and no
// owner.
func WriteArchive(w io.Writer, files []File, mtime time.Time, zipped bool) error {
	files = slices.Clone(files)
	slices.SortFunc(files, func(a, b File) int { return strings.Compare(a.Name, b.Name) })
	if zipped {
		zw := zip.NewWriter(w)
		for _, f := range files {
			h := &zip.FileHeader{Name: f.Name, Method: zip.Deflate, Modified: mtime.UTC()}
			h.SetMode(f.Mode)
			fw, err := zw.CreateHeader(h)
			if err != nil {
				return err
			}
			if _, err := fw.Write(f.Data); err != nil {
				return err
			}
		}
		return zw.Close()
	}
	gz, err := gzip.NewWriterLevel(w, gzip.BestCompression)
	if err != nil {
		return err
	}
	if err := writeTar(gz, nil, files, mtime); err != nil {
		return err
	}
	return gz.Close()
}

// writeTar writes dirs then files as a tar stream owned by root (uid and gid
// 0, no names), every entry with modification time mtime.
func writeTar(w io.Writer, dirs []Dir, files []File, mtime time.Time) error {
	tw := tar.NewWriter(w)
	for _, d := range dirs {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimSuffix(d.Name, "/") + "/",
			Mode: d.Mode, ModTime: mtime.UTC(), Format: tar.FormatPAX}); err != nil {
			return err
		}
	}
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.Name, Mode: int64(f.Mode.Perm()),
			Size: int64(len(f.Data)), ModTime: mtime.UTC(), Format: tar.FormatPAX}); err != nil {
			return err
		}
		if _, err := tw.Write(f.Data); err != nil {
			return err
		}
	}
	return tw.Close()
}

// Checksums returns the SHA256SUMS file of the named files of dir, in the
// format of sha256sum(1) (`sha256sum -c SHA256SUMS` checks it), sorted by
// name.
func Checksums(dir string, names []string) ([]byte, error) {
	names = slices.Clone(names)
	slices.Sort(names)
	var b bytes.Buffer
	for _, n := range names {
		f, err := os.Open(filepath.Join(dir, n))
		if err != nil {
			return nil, err
		}
		h := sha256.New()
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		fmt.Fprintf(&b, "%s  %s\n", hex.EncodeToString(h.Sum(nil)), n)
	}
	return b.Bytes(), nil
}
