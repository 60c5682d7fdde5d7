package release

import (
	"bytes"
	"encoding/pem"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// The image's layout: the binary, its user and the CA bundle.
const (
	// Entrypoint is the binary's path in the image.
	Entrypoint = "/mutatis"
	// User is the image's user and group: distroless' nonroot, which
	// deploy/ and the chart require with runAsNonRoot.
	User = "65532:65532"
	// CABundlePath is where the CA certificates are: the first file Go's
	// crypto/x509 reads on Linux.
	CABundlePath = "/etc/ssl/certs/ca-certificates.crt"
)

// Image describes the image `make image` builds.
type Image struct {
	// Repository is the image's name without tag, e.g.
	// ghcr.io/mutatis-dev/mutatis.
	Repository string
	// Version is the release, the image's tag.
	Version string
	// Revision is the git commit built from.
	Revision string
	// Created is the time every timestamp of the image is set to
	// (SOURCE_DATE_EPOCH, the commit's time).
	Created time.Time
	// Source is the repository URL (org.opencontainers.image.source).
	Source string
	// Binaries maps a platform ("linux/amd64") to its static binary.
	Binaries map[string][]byte
}

// Ref is the image's name with its tag.
func (im *Image) Ref() (name.Tag, error) {
	return name.NewTag(im.Repository + ":" + im.Version)
}

// Labels are the image's OCI annotations, as config labels.
func (im *Image) Labels() map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":         "mutatis",
		"org.opencontainers.image.description":   "Kubernetes MutatingAdmissionPolicies evaluated as kube-apiserver does: admission webhook and offline CLI",
		"org.opencontainers.image.version":       im.Version,
		"org.opencontainers.image.revision":      im.Revision,
		"org.opencontainers.image.created":       im.Created.UTC().Format(time.RFC3339),
		"org.opencontainers.image.source":        im.Source,
		"org.opencontainers.image.url":           im.Source,
		"org.opencontainers.image.documentation": im.Source + "/blob/main/docs/deploy.md",
		"org.opencontainers.image.licenses":      "Apache-2.0",
		"org.opencontainers.image.vendor":        "mutatis",
	}
}

// CABundle is the PEM bundle of the image: the roots of Mozilla's NSS
// trust store that Go's golang.org/x/crypto/x509roots/fallback module
// carries, pinned by go.sum like any dependency (the build machine's
// /etc/ssl would make the image depend on where it was built). Roots NSS
// distrusts after a date are left out: a PEM bundle cannot say so.
func CABundle() []byte {
	var b bytes.Buffer
	for root := range bundle.Roots() {
		if root.Constraint != nil {
			continue
		}
		pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: root.Certificate})
	}
	return b.Bytes()
}

// platformImage builds the image of one platform: a single layer on an
// empty base.
func (im *Image) platformImage(platform string, binary []byte) (v1.Image, error) {
	p, err := v1.ParsePlatform(platform)
	if err != nil {
		return nil, err
	}
	if p.OS != "linux" {
		return nil, fmt.Errorf("platform %s: the image is Linux only", platform)
	}
	var layerTar bytes.Buffer
	dirs := []Dir{{"etc", 0o755}, {"etc/ssl", 0o755}, {"etc/ssl/certs", 0o755}, {"tmp", 0o1777}}
	files := []File{
		{Name: "etc/group", Mode: 0o644, Data: []byte("root:x:0:\nnonroot:x:65532:\n")},
		{Name: "etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{Name: CABundlePath[1:], Mode: 0o644, Data: CABundle()},
		{Name: Entrypoint[1:], Mode: 0o755, Data: binary},
	}
	if err := writeTar(&layerTar, dirs, files, im.Created); err != nil {
		return nil, err
	}
	raw := layerTar.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(raw)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
	if err != nil {
		return nil, err
	}
	created := v1.Time{Time: im.Created.UTC()}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{Layer: layer, History: v1.History{
		Created:   created,
		CreatedBy: "make image (internal/release): " + Entrypoint + ", CA certificates, /etc/passwd",
		Comment:   "mutatis " + im.Version,
	}})
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.Architecture, cfg.OS, cfg.Variant = p.Architecture, p.OS, p.Variant
	cfg.Created = created
	cfg.Author = "mutatis"
	cfg.Config = v1.Config{
		Entrypoint:   []string{Entrypoint},
		User:         User,
		WorkingDir:   "/",
		Env:          []string{"SSL_CERT_FILE=" + CABundlePath},
		Labels:       im.Labels(),
		ExposedPorts: map[string]struct{}{"8443/tcp": {}},
	}
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return nil, err
	}
	return mutate.Annotations(img, im.Labels()).(v1.Image), nil
}

// Build returns the image index of every platform in Binaries, in
// platform order.
func (im *Image) Build() (v1.ImageIndex, map[string]v1.Image, error) {
	if len(im.Binaries) == 0 {
		return nil, nil, fmt.Errorf("no binaries")
	}
	if _, err := im.Ref(); err != nil {
		return nil, nil, err
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	images := map[string]v1.Image{}
	for _, platform := range sortedKeys(im.Binaries) {
		img, err := im.platformImage(platform, im.Binaries[platform])
		if err != nil {
			return nil, nil, err
		}
		p, _ := v1.ParsePlatform(platform)
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: p}})
		images[platform] = img
	}
	return mutate.Annotations(idx, im.Labels()).(v1.ImageIndex), images, nil
}

// Write builds the image and writes it under dir:
//
//   - image/: an OCI image layout whose index.json holds the multi-platform
//     index, named by its tag (skopeo's oci:dist/image:<version>, crane
//     push dist/image);
//   - mutatis_<version>_image.oci.tar: the same layout as a tar
//     (oci-archive:);
//   - mutatis_<version>_image_<os>_<arch>.tar: one platform's image as a
//     docker-archive (docker load, kind load image-archive).
//
// It returns the index's digest and the names of the files written.
func (im *Image) Write(dir string) (v1.Hash, []string, error) {
	idx, images, err := im.Build()
	if err != nil {
		return v1.Hash{}, nil, err
	}
	digest, err := idx.Digest()
	if err != nil {
		return v1.Hash{}, nil, err
	}
	ref, _ := im.Ref()
	layoutDir := filepath.Join(dir, "image")
	if err := os.RemoveAll(layoutDir); err != nil {
		return v1.Hash{}, nil, err
	}
	lp, err := layout.Write(layoutDir, empty.Index)
	if err != nil {
		return v1.Hash{}, nil, err
	}
	if err := lp.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": im.Version,
		"io.containerd.image.name":          ref.Name(),
	})); err != nil {
		return v1.Hash{}, nil, err
	}
	written := []string{}
	ociTar := fmt.Sprintf("mutatis_%s_image.oci.tar", im.Version)
	if err := tarDir(layoutDir, filepath.Join(dir, ociTar), im.Created); err != nil {
		return v1.Hash{}, nil, err
	}
	written = append(written, ociTar)
	for _, platform := range sortedKeys(images) {
		p, _ := v1.ParsePlatform(platform)
		n := fmt.Sprintf("mutatis_%s_image_%s_%s.tar", im.Version, p.OS, p.Architecture)
		if err := tarball.WriteToFile(filepath.Join(dir, n), ref, images[platform]); err != nil {
			return v1.Hash{}, nil, err
		}
		written = append(written, n)
	}
	return digest, written, nil
}

// tarDir writes the regular files and directories under root as a tar at
// out, in name order, with modification time mtime.
func tarDir(root, out string, mtime time.Time) error {
	var dirs []Dir
	var files []File
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			dirs = append(dirs, Dir{Name: rel, Mode: 0o755})
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files = append(files, File{Name: rel, Mode: 0o644, Data: data})
		return nil
	})
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := writeTar(&b, dirs, files, mtime); err != nil {
		return err
	}
	return os.WriteFile(out, b.Bytes(), 0o644)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
