package release

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

var epoch = time.Unix(1795000000, 0).UTC()

func TestArchivesAreReproducible(t *testing.T) {
	files := []File{
		{Name: "README.md", Mode: 0o644, Data: []byte("# mutatis\n")},
		{Name: "mutatis", Mode: 0o755, Data: []byte("binary")},
		{Name: "LICENSE", Mode: 0o644, Data: []byte("license")},
	}
	for _, zipped := range []bool{false, true} {
		t.Run(fmt.Sprintf("zip=%v: the same files in any order give the same bytes, entries sorted, fixed time, modes kept", zipped), func(t *testing.T) {
			var a, b bytes.Buffer
			if err := WriteArchive(&a, files, epoch, zipped); err != nil {
				t.Fatal(err)
			}
			reversed := []File{files[2], files[1], files[0]}
			if err := WriteArchive(&b, reversed, epoch, zipped); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(a.Bytes(), b.Bytes()) {
				t.Fatal("the archive depends on the order of its files")
			}
			entries := readArchive(t, a.Bytes(), zipped)
			var names []string
			for _, e := range entries {
				names = append(names, e.name)
				if !e.mtime.Equal(epoch) {
					t.Errorf("%s: mtime %v, want %v", e.name, e.mtime, epoch)
				}
				want := os.FileMode(0o644)
				if e.name == "mutatis" {
					want = 0o755
				}
				if e.mode != want {
					t.Errorf("%s: mode %v, want %v", e.name, e.mode, want)
				}
			}
			if got := strings.Join(names, ","); got != "LICENSE,README.md,mutatis" {
				t.Errorf("entries %s", got)
			}
			if string(entries[2].data) != "binary" {
				t.Errorf("mutatis holds %q", entries[2].data)
			}
		})
	}
}

type entry struct {
	name  string
	mode  os.FileMode
	mtime time.Time
	data  []byte
}

// readArchive reads a release archive's entries (tar.gz or zip).
func readArchive(t *testing.T, data []byte, zipped bool) []entry {
	t.Helper()
	var out []entry
	if zipped {
		zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range zr.File {
			rc, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(rc)
			rc.Close()
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, entry{f.Name, f.Mode().Perm(), f.Modified.UTC(), b})
		}
		return out
	}
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return readTar(t, gz)
}

func readTar(t *testing.T, r io.Reader) []entry {
	t.Helper()
	var out []entry
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" {
			t.Errorf("%s: owned by %d:%d (%s:%s), want root without names", h.Name, h.Uid, h.Gid, h.Uname, h.Gname)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, entry{h.Name, os.FileMode(h.Mode), h.ModTime.UTC(), b})
	}
}

func TestChecksumsAreWhatSha256sumWrites(t *testing.T) {
	dir := t.TempDir()
	for n, c := range map[string]string{"b.zip": "zip", "a.tar.gz": "tar"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Checksums(dir, []string{"b.zip", "a.tar.gz"})
	if err != nil {
		t.Fatal(err)
	}
	sum := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	want := sum("tar") + "  a.tar.gz\n" + sum("zip") + "  b.zip\n"
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if _, err := Checksums(dir, []string{"missing"}); err == nil {
		t.Error("a missing file gives no error")
	}
}

func TestCABundleIsPEMOfTrustedRoots(t *testing.T) {
	certs := parseCertificates(t, CABundle())
	if len(certs) < 100 {
		t.Fatalf("%d certificates; the NSS store has well over 100 roots", len(certs))
	}
	for _, c := range certs {
		if !c.IsCA {
			t.Errorf("%s is not a CA", c.Subject)
		}
	}
	if !bytes.Equal(CABundle(), CABundle()) {
		t.Error("the bundle is not the same twice")
	}
}

func parseCertificates(t *testing.T, data []byte) []*x509.Certificate {
	t.Helper()
	var out []*x509.Certificate
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			if len(bytes.TrimSpace(data)) != 0 {
				t.Fatalf("trailing data in the bundle: %.40q", data)
			}
			return out
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
}

func testImage(binaries map[string][]byte) *Image {
	return &Image{Repository: "ghcr.io/mutatis-dev/mutatis", Version: "v0.1.0", Revision: "0123abcd",
		Created: epoch, Source: "https://github.com/mutatis-dev/mutatis", Binaries: binaries}
}

func TestImageIsReproducible(t *testing.T) {
	bins := map[string][]byte{"linux/amd64": []byte("amd64 binary"), "linux/arm64": []byte("arm64 binary")}
	dirA, dirB := t.TempDir(), t.TempDir()
	digestA, filesA, err := testImage(bins).Write(dirA)
	if err != nil {
		t.Fatal(err)
	}
	digestB, _, err := testImage(bins).Write(dirB)
	if err != nil {
		t.Fatal(err)
	}
	if digestA != digestB {
		t.Fatalf("the same inputs gave two digests: %s and %s", digestA, digestB)
	}
	for _, f := range filesA {
		a, _ := os.ReadFile(filepath.Join(dirA, f))
		b, _ := os.ReadFile(filepath.Join(dirB, f))
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between two builds", f)
		}
	}
	other := testImage(map[string][]byte{"linux/amd64": []byte("amd64 binary"), "linux/arm64": []byte("another arm64 binary")})
	if d, _, err := other.Write(t.TempDir()); err != nil || d == digestA {
		t.Errorf("another binary gave digest %s (err %v), the same as before", d, err)
	}

	idx := readLayout(t, filepath.Join(dirA, "image"), "v0.1.0")
	if d, _ := idx.Digest(); d != digestA {
		t.Errorf("the layout's index is %s, Write said %s", d, digestA)
	}
	checkIndex(t, idx, bins, "v0.1.0")
	m, _ := idx.IndexManifest()
	img, err := idx.Image(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	if cfg, _ := img.ConfigFile(); !cfg.Created.Time.Equal(epoch) {
		t.Errorf("created %v, want SOURCE_DATE_EPOCH %v", cfg.Created, epoch)
	}
}

func TestImageRefusesBadInputs(t *testing.T) {
	cases := []struct {
		name string
		im   *Image
		want string
	}{
		{"no binaries", testImage(nil), "no binaries"},
		{"a platform other than Linux", testImage(map[string][]byte{"darwin/arm64": {1}}), "the image is Linux only"},
		{"a version that is no tag", &Image{Repository: "ghcr.io/mutatis-dev/mutatis", Version: "v0.1.0+build", Binaries: map[string][]byte{"linux/amd64": {1}}}, "tag"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := tc.im.Write(t.TempDir())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one with %q", err, tc.want)
			}
		})
	}
}

// readLayout reads the OCI layout at dir: one index named by its tag.
func readLayout(t *testing.T, dir, version string) v1.ImageIndex {
	t.Helper()
	root, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := root.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 || m.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != version {
		t.Fatalf("index.json: %+v, want one index named %s", m.Manifests, version)
	}
	idx, err := root.ImageIndex(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

// checkIndex checks the image of every platform in idx, the binaries of
// bins (nil: any binaries, any platforms), and returns the binaries it
// holds, by platform.
func checkIndex(t *testing.T, idx v1.ImageIndex, bins map[string][]byte, version string) map[string][]byte {
	t.Helper()
	if mt, _ := idx.MediaType(); mt != types.OCIImageIndex {
		t.Errorf("index media type %s", mt)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if bins != nil && len(m.Manifests) != len(bins) {
		t.Fatalf("%d manifests, want %d", len(m.Manifests), len(bins))
	}
	got := map[string][]byte{}
	for _, d := range m.Manifests {
		platform := d.Platform.OS + "/" + d.Platform.Architecture
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		got[platform] = checkImage(t, img, platform, version)
		if bins[platform] != nil && !bytes.Equal(got[platform], bins[platform]) {
			t.Errorf("%s: the layer does not hold the platform's binary", platform)
		}
	}
	return got
}

// checkImage checks one platform's image (config, labels, layer) and
// returns its binary.
func checkImage(t *testing.T, img v1.Image, platform, version string) []byte {
	t.Helper()
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.OS + "/" + cfg.Architecture; got != platform {
		t.Errorf("config platform %s, want %s", got, platform)
	}
	if got := strings.Join(cfg.Config.Entrypoint, " "); got != Entrypoint {
		t.Errorf("%s: entrypoint %q", platform, got)
	}
	if cfg.Config.User != "65532:65532" {
		t.Errorf("%s: user %q, want 65532:65532 (non-root)", platform, cfg.Config.User)
	}
	if label := cfg.Config.Labels["org.opencontainers.image.created"]; label != cfg.Created.UTC().Format(time.RFC3339) {
		t.Errorf("%s: created %v, label %s", platform, cfg.Created, label)
	}
	if h := cfg.History; len(h) != 1 || !h[0].Created.Time.Equal(cfg.Created.Time) {
		t.Errorf("%s: history %+v, want one entry created with the image", platform, h)
	}
	for _, l := range []string{"org.opencontainers.image.title", "org.opencontainers.image.source", "org.opencontainers.image.revision",
		"org.opencontainers.image.created", "org.opencontainers.image.licenses"} {
		if cfg.Config.Labels[l] == "" {
			t.Errorf("%s: no label %s", platform, l)
		}
	}
	if v := cfg.Config.Labels["org.opencontainers.image.version"]; v != version {
		t.Errorf("%s: label version %q, want %q", platform, v, version)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("%s: %d layers, want 1 on an empty base", platform, len(layers))
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var binary []byte
	seen := map[string]entry{}
	for _, e := range readTar(t, rc) {
		seen[e.name] = e
		if !e.mtime.Equal(cfg.Created.Time) {
			t.Errorf("%s: %s has mtime %v, not the image's time", platform, e.name, e.mtime)
		}
	}
	bin, ok := seen[Entrypoint[1:]]
	if !ok || bin.mode != 0o755 {
		t.Fatalf("%s: the layer has no executable %s (entries %v)", platform, Entrypoint, keys(seen))
	}
	binary = bin.data
	if ca := seen[CABundlePath[1:]]; len(parseCertificates(t, ca.data)) < 100 {
		t.Errorf("%s: %s has no CA bundle", platform, CABundlePath)
	}
	if !strings.Contains(string(seen["etc/passwd"].data), "nonroot:x:65532:65532:") {
		t.Errorf("%s: /etc/passwd has no nonroot user", platform)
	}
	if seen["tmp/"].mode != os.FileMode(0o1777) {
		t.Errorf("%s: /tmp mode %o", platform, seen["tmp/"].mode)
	}
	return binary
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestDockerArchiveIsTheLayoutsImage(t *testing.T) {
	bins := map[string][]byte{"linux/amd64": []byte("amd64 binary")}
	dir := t.TempDir()
	_, files, err := testImage(bins).Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"mutatis_v0.1.0_image.oci.tar", "mutatis_v0.1.0_image_linux_amd64.tar"}
	if strings.Join(files, ",") != strings.Join(want, ",") {
		t.Fatalf("files %v, want %v", files, want)
	}
	tag, _ := name.NewTag("ghcr.io/mutatis-dev/mutatis:v0.1.0")
	img, err := tarball.ImageFromPath(filepath.Join(dir, files[1]), &tag)
	if err != nil {
		t.Fatal(err)
	}
	if got := checkImage(t, img, "linux/amd64", "v0.1.0"); !bytes.Equal(got, bins["linux/amd64"]) {
		t.Error("the docker archive does not hold the binary")
	}
	idx := readLayout(t, filepath.Join(dir, "image"), "v0.1.0")
	m, _ := idx.IndexManifest()
	layoutImg, err := idx.Image(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	// A docker archive has a manifest of its own; the image ID (the
	// config's digest) is the same.
	got, _ := img.ConfigName()
	if want, _ := layoutImg.ConfigName(); got != want {
		t.Errorf("the docker archive's image ID %s is not the layout's %s", got, want)
	}
}
